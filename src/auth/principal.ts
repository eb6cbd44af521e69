/**
 * The authenticated caller of an MCP request (SEP-2848 "originating authorization context").
 *
 * `iss` + `sub` identify the principal; `act` is the RFC 8693 delegation chain when the token
 * carried one (outermost actor first). Produced by the bearer-token verifier in `src/auth/`,
 * captured unchanged in the call binding. Plain JSON: it crosses into workflow state. Keys derived
 * from it (task owner, quota, four-eyes names) are in `principal-keys.ts`.
 */
export interface Principal {
  /** Token issuer, exact string from the `iss` claim. */
  iss: string;
  /** Subject, exact string from the `sub` claim. */
  sub: string;
  /** RFC 8693 `act` chain, outermost actor first; absent when the token carried no `act` claim. */
  act?: Array<{ iss?: string; sub: string }>;
}
