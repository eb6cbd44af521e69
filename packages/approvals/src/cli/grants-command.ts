/**
 * `countersign approvals grants list [--all] | create … | revoke <id>` (docs/APPROVERS.md §Grants):
 * the approver's command line for grants, a client of `/access/v1/grants` (`../api/grant-routes.ts`).
 *
 * `create` takes the grant's scope — `--principal` and `--tool` (or `--from <request id>`, whose
 * principal, tool and group are the defaults), `--group` — its argument constraints as
 * `--where field:direction=value` (directions `eq`, `max`, `min`, `subpath`, `subset`; the value read
 * as JSON when it is JSON, else as text: `--where amount:max=30000 --where to:eq=acct-991`), its
 * bounds `--uses n` and/or `--duration 1h` (`s`, `m`, `h`, `d`), and a mandatory `--reason`.
 * Exit codes as the other approvals commands: 2 usage or a grant the service refused as invalid or
 * beyond the rules (400), 4 without the grant right or outside the group (403), 5 no such grant or
 * request (404), 6 already revoked (409).
 * Deliberately does not: extend a grant (revoke it and create another).
 */
import type { Command } from 'commander';
import { GRANT_DIRECTIONS, type GrantConstraints } from '@countersign/arap';
import type { ApprovalsClientEnv } from '../config.js';
import { visible } from '../inbox/format.js';
import { APPROVALS_EXIT, ApprovalsCliError, call, parseSets, run } from './approvals-command.js';

const v = (x: unknown): string => visible(String(x));

/** A grant as `GET /access/v1/grants` lists it (the fields this command prints). */
export interface GrantListItem {
  id: string;
  state: string;
  principal: string;
  tool: string;
  approver_group: string;
  constraints_text: string;
  max_uses: number | null;
  uses: number;
  expires_at: string;
  created_by: string;
  reason: string;
  revoked_by: string | null;
  used_by: Array<{ request_id: string; use: number }>;
}

/**
 * `--where field:direction=value` entries as constraints (`@countersign/arap` `GrantConstraints`).
 * Throws {@link ApprovalsCliError} (exit 2) for an entry without `:` or `=`, an unknown direction,
 * or a field named twice; the service checks the rest (400, exit 2).
 */
export function parseWhere(entries: readonly string[]): GrantConstraints {
  // no prototype: a field named __proto__ is an own key the service then refuses, not a lost assignment
  const out: Record<string, Record<string, unknown>> = Object.create(null) as Record<string, Record<string, unknown>>;
  for (const entry of entries) {
    const colon = entry.indexOf(':');
    const eq = entry.indexOf('=');
    if (colon <= 0 || eq < colon) throw new ApprovalsCliError(`--where takes field:direction=value, got ${v(entry)}`, APPROVALS_EXIT.usage);
    const field = entry.slice(0, colon);
    const direction = entry.slice(colon + 1, eq);
    if (!(GRANT_DIRECTIONS as readonly string[]).includes(direction))
      throw new ApprovalsCliError(`--where ${v(field)}: direction must be one of ${GRANT_DIRECTIONS.join(', ')}`, APPROVALS_EXIT.usage);
    if (Object.hasOwn(out, field)) throw new ApprovalsCliError(`--where names ${v(field)} twice`, APPROVALS_EXIT.usage);
    out[field] = { [direction]: parseSets([`v=${entry.slice(eq + 1)}`])['v'] };
  }
  return out as GrantConstraints;
}

/** `90s`, `15m`, `1h`, `2d` (or plain milliseconds) as milliseconds. Throws {@link ApprovalsCliError} (exit 2). */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (m === null) throw new ApprovalsCliError(`--duration takes e.g. 90s, 15m, 1h or 2d, got ${v(text)}`, APPROVALS_EXIT.usage);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Number(m[1]) * unit;
}

/** One grant in lines, as `list` prints it. */
export function grantText(g: GrantListItem): string {
  const count = g.max_uses === null ? `${g.uses} used (no count limit)` : `${g.uses} of ${g.max_uses} used`;
  const lines = [
    `${v(g.id)}  ${v(g.state)}`,
    `  for          ${v(g.principal)} · ${v(g.tool)} · group ${v(g.approver_group)}`,
    `  arguments    ${v(g.constraints_text)}`,
    `  uses         ${count}`,
    `  until        ${v(g.expires_at)}`,
    `  by           ${v(g.created_by)}: ${v(g.reason)}`,
  ];
  if (g.revoked_by !== null) lines.push(`  revoked by   ${v(g.revoked_by)}`);
  if (g.used_by.length > 0) lines.push(`  approved     ${g.used_by.map((u) => `${v(u.request_id)} (#${u.use})`).join(', ')}`);
  return lines.join('\n');
}

/** Options of `grants create`. */
interface CreateOptions {
  principal?: string;
  issuer?: string;
  tool?: string;
  group?: string;
  from?: string;
  where?: string[];
  anyArguments?: boolean;
  uses?: string;
  duration?: string;
  reason: string;
  json?: boolean;
}

/** Register `list`, `create` and `revoke` on the `grants` command. */
export function registerGrantCommands(grants: Command, env: () => ApprovalsClientEnv): void {
  grants
    .command('list')
    .description('grants of your approver groups that hold now, newest first (--all: also used up, expired and revoked)')
    .option('--all', 'every grant, whatever its state')
    .option('--json', 'print the service JSON')
    .action((o: { all?: boolean; json?: boolean }) =>
      run(env, async (client) => {
        const body = (await call(client, 'GET', `/grants?state=${o.all === true ? 'all' : 'active'}`)) as { items: GrantListItem[] };
        if (o.json === true) return `${JSON.stringify(body, null, 2)}\n`;
        return body.items.length === 0 ? 'No grants.\n' : `${body.items.map(grantText).join('\n\n')}\n`;
      }),
    );
  grants
    .command('create')
    .description('grant a principal calls of one tool within argument constraints, for a count and/or a time (needs the grant right)')
    .option('--principal <sub>', "the requester whose calls it covers (default: --from's)")
    .option('--issuer <url>', "the issuer of the principal's tokens (default: --from's; without either, any issuer)")
    .option('--tool <name>', "the tool (default: --from's)")
    .option('--group <name>', "the approver group it stands for (default: --from's, or your only group)")
    .option('--from <request id>', 'make it from this request; a pending one it covers is approved by it')
    .option(
      '--where <field:direction=value...>',
      'an argument constraint, e.g. amount:max=30000 or to:eq=acct-991 (repeatable); with --from and no --where, each argument exactly as in that request',
    )
    .option('--any-arguments', 'no limit on the arguments (refused without it when there is no --where and no --from)')
    .option('--uses <n>', 'at most n calls')
    .option('--duration <d>', 'for this long, e.g. 1h (without it: the longest the rules allow)')
    .requiredOption('--reason <text>', 'why, for the audit trail')
    .option('--json', 'print the service JSON')
    .action((o: CreateOptions) =>
      run(env, async (client) => {
        const uses = o.uses === undefined ? undefined : Number(o.uses);
        if (uses !== undefined && !Number.isInteger(uses))
          throw new ApprovalsCliError(`--uses takes a whole number, got ${v(o.uses)}`, APPROVALS_EXIT.usage);
        const body = {
          ...(o.from !== undefined ? { from_request: o.from } : {}),
          ...(o.principal !== undefined ? { principal: o.principal } : {}),
          ...(o.issuer !== undefined ? { principal_issuer: o.issuer } : {}),
          ...(o.tool !== undefined ? { tool: o.tool } : {}),
          ...(o.group !== undefined ? { approver_group: o.group } : {}),
          ...(o.where !== undefined && o.where.length > 0 ? { constraints: parseWhere(o.where) } : {}),
          ...(o.anyArguments === true ? { any_arguments: true } : {}),
          ...(uses !== undefined ? { max_uses: uses } : {}),
          ...(o.duration !== undefined ? { duration_ms: parseDuration(o.duration) } : {}),
          reason: o.reason,
        };
        const g = (await call(client, 'POST', '/grants', body)) as GrantListItem & { approved_request: string | null };
        if (o.json === true) return `${JSON.stringify(g, null, 2)}\n`;
        const approved = g.approved_request === null ? '' : `It approved ${v(g.approved_request)}.\n`;
        return `Granted ${v(g.id)}: ${v(g.principal)} · ${v(g.tool)} · ${v(g.constraints_text)} · ${g.max_uses === null ? 'no count limit' : `${g.max_uses} uses`} · until ${v(g.expires_at)}\n${approved}`;
      }),
    );
  grants
    .command('revoke <id>')
    .description('end a grant now (its creator, or one with the grant right in its group)')
    .option('--json', 'print the service JSON')
    .action((id: string, o: { json?: boolean }) =>
      run(env, async (client) => {
        const g = (await call(client, 'POST', `/grants/${encodeURIComponent(id)}/revoke`)) as GrantListItem;
        return o.json === true ? `${JSON.stringify(g, null, 2)}\n` : `Revoked ${v(g.id)} (${g.uses} used).\n`;
      }),
    );
}
