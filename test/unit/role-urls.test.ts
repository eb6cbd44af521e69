import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { roleUrls } from '../../src/compose.js';

describe('role URLs of separately running roles', () => {
  it('each role is reached at COUNTERSIGN_HOST and its port when no role URL is set', () => {
    const urls = roleUrls(loadConfig({ COUNTERSIGN_HOST: '10.0.0.5', COUNTERSIGN_PORT: '9001', TEMPORAL_ADDRESS: 't:7233' }));
    expect(urls.resourceUrl).toBe('http://10.0.0.5:9001/mcp');
    expect(urls.approvalsUrl).toBe('http://10.0.0.5:8788');
  });

  it('a role URL replaces the listen host for that role only, and the MCP endpoint and audience follow the MCP URL', () => {
    const urls = roleUrls(
      loadConfig({
        COUNTERSIGN_HOST: '0.0.0.0',
        COUNTERSIGN_MCP_URL: 'https://mcp.example.com/',
        COUNTERSIGN_APPROVALS_URL: 'http://approvals:8788',
        TEMPORAL_ADDRESS: 'temporal:7233',
      }),
    );
    expect(urls.mcpOrigin).toBe('https://mcp.example.com');
    expect(urls.resourceUrl).toBe('https://mcp.example.com/mcp');
    expect(urls.approvalsUrl).toBe('http://approvals:8788');
    expect(urls.issuerUrl).toBe('http://0.0.0.0:8789');
  });

  it('a role URL with a path, or not http(s), is a configuration error naming the variable', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return (err as ConfigError).issues;
      }
      return [];
    };
    expect(problems({ COUNTERSIGN_APPROVALS_URL: 'http://approvals:8788/access' })).toEqual([
      expect.stringMatching(/^COUNTERSIGN_APPROVALS_URL: must be an origin/),
    ]);
    expect(problems({ COUNTERSIGN_ISSUER_URL: 'ftp://issuer' })).toEqual([expect.stringMatching(/^COUNTERSIGN_ISSUER_URL: /)]);
  });
});
