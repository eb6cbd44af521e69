/**
 * `npm run replay:example`: a policy change tried over real traffic, end to end, as
 * docs/PRODUCTION.md §Trying a policy change shows it. Everything runs as separate processes through
 * the product's own command line:
 *
 * 1. the embedded stack with the gateway example, `COUNTERSIGN_CONFIG=countersign.example.json
 *    countersign dev` (Temporal dev server, worker, MCP front, approval service; the reference filesystem server as
 *    upstream "fs"), in a fresh data folder on free ports, so call records go to `<data>/call-records`;
 * 2. `npm run demo`, {@link DEMO_RUNS} times (each: a $10,000 transfer allowed, a transfer to a
 *    blocked account denied, a $50,000 transfer approved by bob out of band);
 * 3. gateway traffic made by the official MCP SDK client (`@modelcontextprotocol/client`), for
 *    each of {@link GATEWAY_REQUESTERS}, {@link GATEWAY_ROUNDS} times: list the shared folder, write
 *    a note, read it back (allowed), and write into `protected/` (requestable: an approval opened and
 *    left pending);
 * 4. `countersign policy replay --policies docs/examples/policy-candidate --since 7d`, its output
 *    printed as it is (the candidate lowers the transfer limit to $5,000 and makes every write of
 *    "fs" need change-advisory approval);
 * 5. the stack stopped, the data folder removed unless `REPLAY_EXAMPLE_KEEP=1`.
 *
 * It prints how long the traffic took: minutes, not the week `--since 7d` would cover. Exits
 * non-zero when a step fails (the stack does not start, a demo run fails, a call is not answered as
 * expected, replay exits non-zero).
 *
 * Deliberately does not: approve the gateway's pending approvals (a pending task's call replays
 * all the same), use the default ports (a running `npm start` is left alone), or print arguments
 * (replay never does).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { PROJECT_ROOT } from '../src/project-root.js';
import { freePort } from '../src/temporal/dev-server.js';

/** Runs of `npm run demo`. */
export const DEMO_RUNS = 3;
/** Requesters of the gateway traffic (token subjects). */
export const GATEWAY_REQUESTERS = ['alice', 'dave'] as const;
/** Rounds of gateway traffic per requester. */
export const GATEWAY_ROUNDS = 2;
/** The candidate policy folder kept in the repository. */
export const CANDIDATE_DIR = join('docs', 'examples', 'policy-candidate');

const say = (s: string) => process.stderr.write(`# ${s}\n`);

/** Run a command to its end; resolves with its exit code and output. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** Start `countersign dev`; resolves once it prints that it is running. */
function startStack(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/countersign.mjs', 'dev'], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('Countersign is running.')) resolve(child);
    });
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.once('exit', (code) => reject(new Error(`countersign dev exited (${code}) before it was running:\n${err.slice(-2000)}`)));
  });
}

async function stopStack(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGINT');
  await exited;
}

interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
}

/** One requester's gateway traffic (module header, step 3). */
async function gatewayTraffic(env: NodeJS.ProcessEnv, mcpUrl: string, sub: string, filesDir: string): Promise<void> {
  const token = await run(process.execPath, ['bin/countersign.mjs', 'token', '--sub', sub], env);
  if (token.code !== 0) throw new Error(`countersign token failed: ${token.stderr}`);
  const client = new Client({ name: 'replay-example', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token.stdout.trim()}` } } }),
  );
  const call = async (name: string, args: Record<string, unknown>, expect: 'ran' | 'approval') => {
    const r = (await client.callTool({ name, arguments: args })) as ToolResult;
    const text = r.content.map((c) => c.text ?? '').join(' ');
    const ok = expect === 'ran' ? r.isError !== true : /approval/i.test(text);
    if (!ok) throw new Error(`${sub} ${name}: expected it ${expect === 'ran' ? 'to run' : 'to open an approval'}`);
  };
  try {
    for (let round = 1; round <= GATEWAY_ROUNDS; round++) {
      const note = join(filesDir, `${sub}-standup-${round}.md`);
      await call('fs__list_directory', { path: filesDir }, 'ran');
      await call('fs__write_file', { path: note, content: `standup notes of ${sub}, round ${round}\n` }, 'ran');
      await call('fs__read_text_file', { path: note }, 'ran');
      await call(
        'fs__write_file',
        { path: join(filesDir, 'protected', `${sub}-limits-${round}.json`), content: '{"daily": 1}\n' },
        'approval',
      );
    }
  } finally {
    await client.close();
  }
}

async function main(): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'countersign-replay-example-'));
  const [port, approvalsPort, issuerPort, workerPort, temporalPort, temporalUiPort] = await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=countersign-source`.trim(),
    COUNTERSIGN_DATA_DIR: dataDir,
    // the stack and `policy replay` both read it: replay needs the upstream tools' attributes
    COUNTERSIGN_CONFIG: join(PROJECT_ROOT, 'countersign.example.json'),
    COUNTERSIGN_PORT: String(port),
    COUNTERSIGN_APPROVALS_PORT: String(approvalsPort),
    COUNTERSIGN_ISSUER_PORT: String(issuerPort),
    COUNTERSIGN_WORKER_PORT: String(workerPort),
    TEMPORAL_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(temporalUiPort),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  };
  say(`data folder ${dataDir}`);
  say('starting: COUNTERSIGN_CONFIG=countersign.example.json countersign dev');
  const stack = await startStack(env);
  try {
    const trafficStart = Date.now();
    for (let i = 1; i <= DEMO_RUNS; i++) {
      const demo = await run('npm', ['run', '--silent', 'demo'], env);
      const last = demo.stdout.trim().split('\n').at(-1);
      say(`npm run demo (${i}/${DEMO_RUNS}): ${last}`);
      if (demo.code !== 0) throw new Error(`npm run demo failed:\n${demo.stdout.slice(-2000)}${demo.stderr.slice(-2000)}`);
    }
    const mcpUrl = `http://127.0.0.1:${port}/mcp`;
    for (const sub of GATEWAY_REQUESTERS) await gatewayTraffic(env, mcpUrl, sub, join(dataDir, 'files'));
    say(
      `gateway traffic: ${GATEWAY_REQUESTERS.length} requesters x ${GATEWAY_ROUNDS} rounds of list, write, read (allowed) and a protected write (approval)`,
    );
    const trafficMs = Date.now() - trafficStart;
    say(`traffic took ${(trafficMs / 1000).toFixed(1)} s (not a week; --since 7d covers it)`);

    // histories are listed through Temporal's visibility, which trails the starts a little
    const histories = DEMO_RUNS + GATEWAY_REQUESTERS.length * GATEWAY_ROUNDS;
    const args = ['bin/countersign.mjs', 'policy', 'replay', '--policies', CANDIDATE_DIR, '--since', '7d'];
    for (let i = 0; ; i++) {
      const probe = await run(process.execPath, [...args, '--json'], env);
      const seen = probe.code === 0 ? (JSON.parse(probe.stdout) as { sources: { workflowHistories: number } }).sources : undefined;
      if (seen && seen.workflowHistories >= histories) break;
      if (i >= 30) throw new Error(`replay did not see the ${histories} approval workflows: ${probe.stderr}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    process.stdout.write(`$ countersign policy replay --policies ${CANDIDATE_DIR} --since 7d\n`);
    const replay = await run(process.execPath, args, env);
    process.stdout.write(replay.stdout);
    process.stderr.write(replay.stderr);
    return replay.code;
  } finally {
    await stopStack(stack);
    if (process.env.REPLAY_EXAMPLE_KEEP === '1') say(`kept ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`replay example failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
