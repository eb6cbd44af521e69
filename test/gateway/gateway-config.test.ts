// Scope: the gateway configuration file (every problem listed with its JSON path, secrets only by
// environment reference, `${dataDir}` / `${configDir}`), the namespaced tool-name rule, and the
// example configuration shipped at the project root.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GatewayConfigError, loadGatewayConfig, parseGatewayConfig } from '../../src/gateway/config-file.js';
import { MCP_TOOL_NAME_PATTERN, namespacedToolName, splitToolName } from '../../src/gateway/tool-names.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';

const opts = { file: '/etc/countersign/countersign.json', env: { FS_TOKEN: 's3cret', API_KEY: 'k' }, dataDir: '/var/lib/countersign' };

function issuesOf(value: unknown, env: Record<string, string | undefined> = opts.env): string[] {
  try {
    parseGatewayConfig(value, { ...opts, env });
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayConfigError);
    return (err as GatewayConfigError).issues;
  }
  throw new Error('expected a GatewayConfigError');
}

describe('gateway configuration file', () => {
  it('a valid file resolves environment references, ${dataDir} and ${configDir}, and applies defaults', () => {
    const c = parseGatewayConfig(
      {
        upstreams: [
          {
            name: 'fs',
            transport: 'stdio',
            command: 'node',
            args: ['${configDir}/server.js', '${dataDir}/files'],
            env: { TOKEN: { fromEnv: 'FS_TOKEN' } },
            createDirs: ['${dataDir}/files/protected'],
          },
          {
            name: 'api',
            transport: 'http',
            url: 'https://mcp.example.com/mcp',
            headers: { Authorization: { fromEnv: 'API_KEY', prefix: 'Bearer ' } },
            tools: ['search'],
          },
        ],
      },
      opts,
    );
    expect(c.upstreams).toEqual([
      {
        name: 'fs',
        transport: 'stdio',
        command: 'node',
        args: ['/etc/countersign/server.js', '/var/lib/countersign/files'],
        env: { TOKEN: 's3cret' },
        cwd: '/etc/countersign',
        createDirs: ['/var/lib/countersign/files/protected'],
        tools: 'all',
        connectTimeoutMs: 30_000,
        callTimeoutMs: 60_000,
      },
      {
        name: 'api',
        transport: 'http',
        url: 'https://mcp.example.com/mcp',
        headers: { Authorization: 'Bearer k' },
        tools: ['search'],
        connectTimeoutMs: 30_000,
        callTimeoutMs: 60_000,
      },
    ]);
  });

  it('lists every problem at once, each with its JSON path', () => {
    const issues = issuesOf({
      upstreams: [
        { name: 'fs_1', transport: 'stdio', command: '' },
        { name: 'web', transport: 'http', url: 'ftp://x', tools: [] },
        { name: 'x', transport: 'carrier-pigeon' },
      ],
      extra: true,
    });
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\$\.upstreams\[0\]\.name: must be 1-32 characters/),
        expect.stringMatching(/^\$\.upstreams\[0\]\.command: /),
        expect.stringMatching(/^\$\.upstreams\[1\]\.url: /),
        expect.stringMatching(/^\$\.upstreams\[1\]\.tools: /),
        expect.stringMatching(/^\$\.upstreams\[2\]\.transport: /),
        expect.stringMatching(/^\$: .*extra/),
      ]),
    );
    expect(issues.length).toBeGreaterThanOrEqual(6);
  });

  it('a secret cannot be written inline: env and header values must be environment references', () => {
    const issues = issuesOf({
      upstreams: [
        { name: 'fs', transport: 'stdio', command: 'node', env: { TOKEN: 's3cret' } },
        { name: 'api', transport: 'http', url: 'https://x/mcp', headers: { Authorization: 'Bearer s3cret' } },
      ],
    });
    expect(issues).toEqual([
      expect.stringMatching(/^\$\.upstreams\[0\]\.env\.TOKEN: /),
      expect.stringMatching(/^\$\.upstreams\[1\]\.headers\.Authorization: /),
    ]);
    expect(issues.join('\n')).not.toContain('s3cret');
  });

  it('an unset environment variable is a listed problem naming the variable, not its value', () => {
    const issues = issuesOf(
      {
        upstreams: [
          {
            name: 'api',
            transport: 'http',
            url: 'https://x/mcp',
            headers: { Authorization: { fromEnv: 'MISSING_TOKEN' }, 'X-Key': { fromEnv: 'ALSO_MISSING' } },
          },
        ],
      },
      {},
    );
    expect(issues).toEqual([
      '$.upstreams[0].headers.Authorization: environment variable MISSING_TOKEN is not set',
      '$.upstreams[0].headers.X-Key: environment variable ALSO_MISSING is not set',
    ]);
  });

  it('unset variables are listed together with the schema problems', () => {
    const issues = issuesOf(
      {
        upstreams: [
          { name: 'a_b', transport: 'stdio' },
          { name: 'x', transport: 'http', url: 'https://x/mcp', headers: { Authorization: { fromEnv: 'NOT_SET' } } },
        ],
      },
      {},
    );
    expect(issues).toEqual([
      expect.stringMatching(/^\$\.upstreams\[0\]\.name: /),
      expect.stringMatching(/^\$\.upstreams\[0\]\.command: /),
      '$.upstreams[1].headers.Authorization: environment variable NOT_SET is not set',
    ]);
  });

  it('two upstreams with one name (ignoring case) are refused, so namespaces never collide', () => {
    const issues = issuesOf({
      upstreams: [
        { name: 'fs', transport: 'stdio', command: 'a' },
        { name: 'FS', transport: 'stdio', command: 'b' },
      ],
    });
    expect(issues).toEqual([expect.stringMatching(/^\$\.upstreams: upstream names must be unique/)]);
  });

  it('a file that is not JSON is one problem at $', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'countersign-cfg-')), 'c.json');
    writeFileSync(file, '{ upstreams: ');
    expect(() => loadGatewayConfig(file, { env: {}, dataDir: '/d' })).toThrow(GatewayConfigError);
  });

  it('the shipped example configuration is valid', () => {
    const c = loadGatewayConfig(join(PROJECT_ROOT, 'countersign.example.json'), { env: {}, dataDir: '/data' });
    expect(c.upstreams.map((u) => [u.name, u.transport])).toEqual([['fs', 'stdio']]);
  });
});

describe('namespaced tool names', () => {
  it('namespace__tool is a valid MCP tool name and splits back at the first "__"', () => {
    expect(namespacedToolName('fs', 'write_file')).toBe('fs__write_file');
    expect(splitToolName('fs__write__file')).toEqual({ namespace: 'fs', tool: 'write__file' });
    expect(splitToolName('wire_transfer')).toBeUndefined();
  });

  it('an upstream tool whose namespaced name would break the MCP rules gets no name', () => {
    expect(namespacedToolName('fs', 'write file')).toBeUndefined();
    expect(namespacedToolName('fs', 'x'.repeat(127))).toBeUndefined();
    expect(namespacedToolName('fs', 'ok.name-1')).toMatch(MCP_TOOL_NAME_PATTERN);
  });
});
