// Scope: the composition root's defaults are lazy: what an override replaces is never opened —
// no data folder, no Temporal connection, no ledger — and the front it builds answers over the parts given.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { compose } from '../../src/compose.js';
import { defaultConfig } from '../../src/config.js';
import type { TaskService } from '../../src/mcp/task-service.js';
import { createToolRegistry } from '../../src/tools/registry.js';

const scratch = mkdtempSync(join(tmpdir(), 'countersign-compose-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('compose', () => {
  it('a front composed with its client, tools, secrets and verifier given opens no data folder and no connection', async () => {
    const dataDir = join(scratch, 'data');
    const used: string[] = [];
    const temporal = new Proxy({} as Client, { get: (_t, name) => void used.push(String(name)) });
    const tasks = new Proxy({} as TaskService, { get: (_t, name) => void used.push(`tasks.${String(name)}`) });
    const composed = await compose(defaultConfig({ COUNTERSIGN_DATA_DIR: dataDir, TEMPORAL_ADDRESS: '127.0.0.1:1' }), {
      logger: pino({ level: 'silent' }),
      secrets: { dedupKey: 'k', callbackSecret: 's' },
      temporal: { client: temporal },
      tools: { tools: createToolRegistry([]), pdp: { evaluate: async () => ({ decision: 'allow', policyIds: [] }) } },
      worker: false,
      front: {
        tasks,
        subscriptions: false,
        resourceUrl: 'http://127.0.0.1:9/mcp',
        auth: { verifier: { verify: () => Promise.reject(new Error('no')) }, authorizationServers: [] },
      },
    });
    const res = await composed.front.app.request('/.well-known/oauth-protected-resource/mcp');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ resource: 'http://127.0.0.1:9/mcp', authorization_servers: [] });
    expect(composed.temporal).toBe(temporal);
    await composed.front.close();
    await composed.close(); // after the front's own close: each part closes once
    expect(existsSync(dataDir)).toBe(false);
    expect(used).toEqual([]);
  });
});
