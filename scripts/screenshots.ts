/**
 * The inbox screenshots of the docs (`docs/images/*.png`), taken from the running product: the
 * embedded stack of `npm start` (`src/stack.ts`, started by the end-to-end harness
 * `test/support/stack-harness.ts` with the default policies) on a Temporal dev server in a fresh
 * temporary folder, requests opened by a real MCP client, and the inbox signed in and shown in
 * Chromium (`test/browser/browser-harness.ts`) at {@link VIEWPORT}.
 *
 * Each image is one {@link Scene} of {@link SCENES}: its file name and how to bring the page to
 * the state shown. To add a page (the narrowed request page, a break-glass banner), add one more
 * entry: open what it needs through `ctx`, end on the page, and reference the PNG from the doc it
 * illustrates. Scenes run in order on one stack and one signed-in browser; a scene should open its
 * own request (a unique memo) rather than rely on another's.
 *
 * Usage: `npm run docs:screenshots` writes every scene; `npm run docs:screenshots -- NAME…` only
 * those. Values on the page that change between runs (ages, times, ids) change the PNG: commit it
 * when the page itself changed.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { PROJECT_ROOT } from '../src/project-root.js';
import type { Stack } from '../src/stack.js';
import { openBrowser, openRequest, screenshot, signIn } from '../test/browser/browser-harness.js';
import type { WireClient } from '@countersign/client';
import { clientFor, startTestStack, testConfig, type WireTask } from '../test/support/stack-harness.js';
import { runAnalyticsScenario, withAnalyticsLead } from '../test/browser/analytics-scenario.js';

/** Where the images go, relative to the project root. */
export const IMAGES_DIR = join('docs', 'images');

/** The browser window, in CSS pixels: wide enough for the request page's two columns, small enough for a modest PNG. */
export const VIEWPORT = { width: 1200, height: 800 };

/** What a scene works with: the stack, the approver's signed-in page (bob, treasury), and wire clients by subject. */
export interface SceneContext {
  stack: Stack;
  page: Page;
  client(sub: string): Promise<WireClient>;
}

/** One image: `docs/images/<name>.png`, taken full-page once `show` resolves on the page to capture. */
export interface Scene {
  name: string;
  /** Which doc shows it, for the log line. */
  doc: string;
  show(ctx: SceneContext): Promise<void>;
}

/** A $50,000 transfer with a hidden `reference` (writeOnly in wire_transfer's schema), the value compared in the Hidden values card. */
const redactedRequest: Scene = {
  name: 'redacted-request',
  doc: 'docs/APPROVERS.md §Hidden values',
  async show({ stack, page, client }) {
    const reference = 'INV-2026-0042';
    const memo = `supplier invoice ${randomUUID().slice(0, 4)}`;
    const alice = await client('alice');
    const t = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-4242', amount: 50_000, memo, reference },
    });
    if (t.resultType !== 'task') throw new Error('the transfer did not open an approval task');
    await openRequest(page, stack.urls.approverPage, memo);
    const field = page.locator('[data-testid=hidden-values] [data-redacted-digest]').first();
    await field.locator('input[data-compare-input]').fill(reference);
    await field.getByRole('button', { name: 'Compare' }).click();
    await field.locator('[data-compare-result]', { hasText: 'Match' }).waitFor();
  },
};

/** A $50,000 transfer with the "Propose a narrower call" form filled in with $20,000, not yet sent. */
const narrowedRequest: Scene = {
  name: 'narrowed-request',
  doc: 'docs/APPROVERS.md §Narrowing a request',
  async show({ stack, page, client }) {
    const memo = `supplier invoice ${randomUUID().slice(0, 4)}`;
    const alice = await client('alice');
    const t = await alice.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-4242', amount: 50_000, memo } });
    if (t.resultType !== 'task') throw new Error('the transfer did not open an approval task');
    await openRequest(page, stack.urls.approverPage, memo);
    const form = page.locator('[data-testid=narrow-form]');
    await form.locator('input[data-narrow-field=amount]').fill('20000');
    await form.locator('textarea[name=comment]').fill('Half now, the rest next quarter.');
    await form.scrollIntoViewIfNeeded();
  },
};

/** Every image of the docs, in the order they are taken. */
/** The rules file's `analytics.quickApprovalSeconds` for the screenshots: the default. */
const ANALYTICS_QUICK_SECONDS = 10;

/**
 * The analytics page of bob, the analytics lead (the rules file of {@link takeScreenshots}), after a
 * short real run: transfers and changes decided in the inbox and through the API, one transfer left
 * pending, besides what the scenes before it left open.
 */
const approvalAnalytics: Scene = {
  name: 'approval-analytics',
  doc: 'docs/APPROVERS.md §Approval analytics',
  async show({ stack, page }) {
    await runAnalyticsScenario(stack, page, ANALYTICS_QUICK_SECONDS);
    await page.goto(`${stack.urls.approverPage}/analytics`);
    await page.getByTestId('chart-tool').waitFor();
  },
};

export const SCENES: readonly Scene[] = [redactedRequest, narrowedRequest, approvalAnalytics];

/** Take the scenes named in `only` (all when empty) on a fresh stack; resolves to the paths written. */
export async function takeScreenshots(only: readonly string[] = []): Promise<string[]> {
  const unknown = only.filter((n) => !SCENES.some((s) => s.name === n));
  if (unknown.length > 0) throw new Error(`no scene ${unknown.join(', ')}; scenes: ${SCENES.map((s) => s.name).join(', ')}`);
  const config = testConfig();
  withAnalyticsLead(config, ANALYTICS_QUICK_SECONDS); // the default rules, and bob may see the analytics page
  const stack = await startTestStack(config);
  const browser = await openBrowser(VIEWPORT);
  const written: string[] = [];
  try {
    const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
    await signIn(browser.page, stack.urls.approverPage, bob.id, bob.secret);
    const ctx: SceneContext = { stack, page: browser.page, client: (sub) => clientFor(stack, sub) };
    for (const scene of SCENES.filter((s) => only.length === 0 || only.includes(s.name))) {
      await scene.show(ctx);
      const path = await screenshot(browser.page, scene.name, join(PROJECT_ROOT, IMAGES_DIR));
      process.stderr.write(`screenshots: ${join(IMAGES_DIR, `${scene.name}.png`)} (${scene.doc})\n`);
      written.push(path);
    }
  } finally {
    await browser.close();
    await stack.stop();
  }
  return written;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  takeScreenshots(process.argv.slice(2)).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`screenshots: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
