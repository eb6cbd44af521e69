// Scope: docker-compose.yml, the production shape, checked without Docker: against the Compose
// Specification's JSON schema (vendored in deploy/schema/compose-spec.json) and against the
// project's rules — every role's environment is a valid configuration, healthchecks probe the
// role's own port, images are pinned, no install at start, secrets only by interpolation, and the
// namespace setup matches what the worker checks and the workflows upsert.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { serveOptionProblem } from '../../src/cli/serve-command.js';
import { ConfigSchema, loadConfig } from '../../src/config.js';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { roleUrls } from '../../src/compose.js';
import { requiredRetentionMs } from '../../src/temporal/namespace-retention.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../workflows/search-attributes.js';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  env_file?: Array<{ path: string; required?: boolean }>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  expose?: string[];
  profiles?: string[];
}
interface ComposeFile {
  services: Record<string, Service>;
}

const text = readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8');
/** The file as Compose reads it: YAML merge keys (`<<: *countersign`) resolved. */
const compose = parse(text, { merge: true }) as ComposeFile;
const schema = JSON.parse(readFileSync(join(PROJECT_ROOT, 'deploy/schema/compose-spec.json'), 'utf8')) as object;
// the Compose schema is draft-07 (named by its https URL, which ajv does not register) with a few
// annotation keywords ajv does not know (`deprecated`): compile it without checking it against the meta-schema
const validate = new Ajv({ strict: false, allErrors: true, validateSchema: false }).compile(schema);

/** Compose interpolation of `${VAR:-default}` (the default) and `${VAR:?message}` (a stand-in: the operator must set it). */
function interpolate(value: string): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g, (_m, _name: string, kind?: string, rest?: string) =>
    kind === '-' ? (rest ?? '') : 'set-by-operator',
  );
}

/** The Countersign services: those built from the repository's Dockerfile, with the role their command names. */
const roleServices = Object.entries(compose.services)
  .filter(([, s]) => s.build !== undefined)
  .map(([name, s]) => {
    const cmd = s.command ?? [];
    return { name, service: s, role: cmd[cmd.indexOf('--role') + 1] ?? '' };
  });

/** The configuration a role's container starts with: its `environment` interpolated, and the image's `ENV`. */
function configOf(s: Service) {
  const env = Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));
  return loadConfig({ COUNTERSIGN_HOST: '0.0.0.0', COUNTERSIGN_DATA_DIR: '/var/lib/countersign', ...env });
}

/** The default port of each role, from src/config.ts's schema. */
const defaults = ConfigSchema.parse({});
const ROLE_PORT: Record<string, number> = {
  mcp: defaults.COUNTERSIGN_PORT,
  approvals: defaults.COUNTERSIGN_APPROVALS_PORT,
  issuer: defaults.COUNTERSIGN_ISSUER_PORT,
  worker: defaults.COUNTERSIGN_WORKER_PORT,
};

describe('docker-compose.yml', () => {
  it('validates against the Compose Specification schema', () => {
    const ok = validate(parse(text, { merge: true }));
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it('the schema check rejects a misspelt healthcheck key and an unknown service key', () => {
    const broken = parse(text, { merge: true }) as { services: Record<string, Record<string, unknown>> };
    broken.services.worker!.healthcheck = { tset: ['CMD', 'true'] };
    broken.services.mcp!.restart_policy = 'always';
    expect(validate(broken)).toBe(false);
    expect(validate.errors?.map((e) => e.params)).toEqual(
      expect.arrayContaining([{ additionalProperty: 'tset' }, { additionalProperty: 'restart_policy' }]),
    );
  });

  it('runs the worker, mcp and approvals roles, and the development issuer only under a profile', () => {
    expect(roleServices.map((r) => r.role).sort()).toEqual(['approvals', 'issuer', 'mcp', 'worker']);
    for (const { role, service } of roleServices) {
      expect(serveOptionProblem({ role, ...serveOptionsOf(service.command ?? []) }), role).toBeUndefined();
    }
    expect(compose.services.issuer?.profiles).toEqual(['dev-issuer']);
  });

  it('pins every image by a version tag, never latest', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      expect(s.image, name).toMatch(/^[a-z0-9./-]+:(?!latest$)[A-Za-z0-9._-]*\d[A-Za-z0-9._-]*$/);
    }
  });

  it('installs nothing at container start: no npm, npx or package manager in any command or entrypoint', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      const argv = [...(s.entrypoint ?? []), ...(s.command ?? [])].join(' ');
      expect(argv, name).not.toMatch(/\b(npm|npx|yarn|pnpm)\b|apt-get|pip install/);
    }
  });

  it('gives every role a healthcheck that probes /readyz at the port src/config.ts assigns to that role, and publishes that port', () => {
    for (const { name, role, service } of roleServices) {
      expect(service.healthcheck?.test.slice(0, 3), name).toEqual(['CMD', 'node', 'bin/healthcheck.mjs']);
      const port = ROLE_PORT[role]!;
      expect(service.healthcheck?.test.slice(3), name).toEqual([`http://127.0.0.1:${port}/readyz`]);
      const published = [...(service.ports ?? []), ...(service.expose ?? [])].map((p) => p.split(':').at(-1));
      expect(published, name).toContain(String(port));
    }
  });

  it("every role's environment is a valid configuration that reaches Temporal and the other roles by their service names", () => {
    const services = Object.keys(compose.services);
    for (const { name, role, service } of roleServices) {
      const config = configOf(service);
      const urls = roleUrls(config);
      expect(services, `${name}: TEMPORAL_ADDRESS`).toContain(urls.temporalAddress.split(':')[0]);
      expect(new URL(urls.approvalsUrl).hostname, name).toBe('approvals');
      expect(new URL(urls.approvalsUrl).port, name).toBe(String(ROLE_PORT.approvals));
      expect(new URL(urls.issuerUrl).hostname, name).toBe('issuer');
      expect(new URL(urls.issuerUrl).port, name).toBe(String(ROLE_PORT.issuer));
      expect(config.COUNTERSIGN_NAMESPACE_RETENTION_CHECK, name).toBe('fail');
      if (role === 'mcp') {
        const callback = new URL(serveOptionsOf(service.command ?? []).callbackBaseUrl!);
        expect([callback.hostname, callback.port]).toEqual(['mcp', String(ROLE_PORT.mcp)]);
      }
    }
    const namespaces = new Set(roleServices.map((r) => configOf(r.service).TEMPORAL_NAMESPACE));
    expect([...namespaces]).toEqual([compose.services['temporal-setup']?.environment?.NAMESPACE]);
  });

  it('worker and mcp start only after the schema and namespace setup completed and the approval service is healthy', () => {
    for (const name of ['worker', 'mcp']) {
      expect(compose.services[name]?.depends_on).toMatchObject({
        'temporal-setup': { condition: 'service_completed_successfully' },
        approvals: { condition: 'service_healthy' },
      });
    }
    expect(compose.services.temporal?.depends_on).toMatchObject({ 'temporal-schema': { condition: 'service_completed_successfully' } });
    expect(compose.services['temporal-schema']?.depends_on).toMatchObject({ postgresql: { condition: 'service_healthy' } });
  });

  it('takes secrets only from the environment or a git-ignored env file, never as literal values', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const [key, value] of Object.entries(s.environment ?? {})) {
        if (/PASSWORD|PWD|SECRET|API_KEY|PAYLOAD_KEYS|TOKEN/.test(key))
          expect(String(value), `${name}.${key}`).toMatch(/^\$\{[A-Z0-9_]+:\?/);
      }
    }
    for (const { name, service } of roleServices)
      expect(service.env_file, name).toEqual([{ path: './secrets/countersign.env', required: true }]);
    expect(readFileSync(join(PROJECT_ROOT, '.gitignore'), 'utf8').split('\n')).toContain('secrets/');
    // the example holds no value: every assignment is commented out
    const example = readFileSync(join(PROJECT_ROOT, 'deploy/countersign.env.example'), 'utf8');
    expect(example.split('\n').filter((l) => /^[A-Z_]+=/.test(l))).toEqual([]);
  });

  it('creates the namespace with at least the retention the worker requires, and registers every search attribute the workflow upserts', () => {
    const setup = compose.services['temporal-setup']!;
    const retention = /^(\d+)h$/.exec(setup.environment?.RETENTION ?? '');
    expect(retention).not.toBeNull();
    const worker = configOf(compose.services.worker!);
    expect(Number(retention![1]) * 3_600_000).toBeGreaterThanOrEqual(requiredRetentionMs(worker.COUNTERSIGN_RESULT_RETENTION_MS));
    const script = readFileSync(join(PROJECT_ROOT, 'deploy/temporal-setup.sh'), 'utf8');
    const registered = /for name in ([^;]+);/.exec(script)?.[1]?.trim().split(/\s+/);
    expect(registered?.sort()).toEqual(SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => d.name).sort());
    expect(script).toContain('--type Keyword');
  });
});

/** The `serve` options of a compose command (`--callback-base-url x` → `{ callbackBaseUrl: 'x' }`), role excluded. */
function serveOptionsOf(argv: string[]): { callbackBaseUrl?: string; approvalsUrl?: string } {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag.startsWith('--') && flag !== '--role')
      out[flag.slice(2).replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase())] = argv[++i]!;
  }
  return out;
}
