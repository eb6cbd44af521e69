#!/usr/bin/env node
// Container health probe (Dockerfile HEALTHCHECK, docker-compose.yml): exits 0 when any of the URLs
// given as arguments answers 2xx within 3 s, else 1. Plain Node, no TypeScript loader, so a probe
// costs one short process; it reads no environment (the URLs name the role's port).
const urls = process.argv.slice(2);
if (urls.length === 0) {
  process.stderr.write('usage: healthcheck.mjs <url> [<url> ...]\n');
  process.exit(2);
}
const probe = async (url) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
};
try {
  await Promise.any(urls.map(probe));
  process.exit(0);
} catch {
  process.stderr.write(`unhealthy: no answer 2xx from ${urls.join(', ')}\n`);
  process.exit(1);
}
