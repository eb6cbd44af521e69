/**
 * The names of a requester that the four-eyes rule compares with a decider's names (a requester
 * never decides their own request). Issuers are not compared: approvers are configured by bare name.
 * Kept here, not in the gate: only the approval service compares names.
 */

/** The subject and each actor of its RFC 8693 `act` chain, lower-cased (names compare case-insensitively). */
export function principalNames(p: { sub: string; act?: ReadonlyArray<{ sub: string }> | undefined }): Set<string> {
  return new Set([p.sub, ...(p.act ?? []).map((a) => a.sub)].map((n) => n.toLowerCase()));
}
