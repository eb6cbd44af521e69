/**
 * The roles `countersign serve --role` runs (`src/stack-roles.ts` starts each). Their own module so
 * the command line names them without loading what starts them.
 */

/** The roles `serve --role` accepts. */
export const ROLES = ['temporal', 'worker', 'mcp', 'approvals', 'issuer'] as const;

/** One of {@link ROLES}. */
export type Role = (typeof ROLES)[number];
