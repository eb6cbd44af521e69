// Scope: the approval analytics page in a real browser (Debian Chromium via playwright-core)
// against the whole stack (Temporal dev server, MCP front, worker, approval service over HTTP):
// alice's MCP client opens transfers and changes, bob decides in the inbox and carol through the
// API (analytics-scenario.ts); bob, the lead the rules file names, reads the analytics page, whose
// SVG charts are drawn from those records; carol, not a lead, gets no link and a 403.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { startTestStack, testConfig } from '../support/stack-harness.js';
import { runAnalyticsScenario, withAnalyticsLead } from './analytics-scenario.js';
import { openBrowser, screenshot, signInAs, type ApproverBrowser } from './browser-harness.js';

const QUICK_SECONDS = 2;

let stack: Stack;
const opened: ApproverBrowser[] = [];
beforeAll(async () => {
  const config = testConfig();
  withAnalyticsLead(config, QUICK_SECONDS);
  stack = await startTestStack(config);
}, 120_000);
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()));
  await stack?.stop();
});

/** A fresh browser signed in to the inbox as `id`. */
async function browserOf(id: string): Promise<ApproverBrowser> {
  const b = await openBrowser();
  opened.push(b);
  await signInAs(b.page, stack, id);
  return b;
}

/** The rendered width of the `rect.<bar>` of row `row` in chart `chart` (its test id), CSS pixels; 0 when absent. */
async function barWidth(b: ApproverBrowser, chart: string, row: string, bar: string): Promise<number> {
  const box = await b.page.locator(`[data-testid=${chart}] [data-row="${row}"] rect.${bar}`).boundingBox();
  return box?.width ?? 0;
}

describe('the approval analytics page', () => {
  it("a lead's analytics page shows, as charts drawn in the browser, the time to decision per tool and channel, the approval rate, what waits and the approval given without reading, from decisions made in the inbox and through the API", async () => {
    const b = await browserOf('bob');
    await runAnalyticsScenario(stack, b.page, QUICK_SECONDS);

    await b.page.click('header.top nav a:has-text("Analytics")');
    await b.page.waitForURL(/\/approver\/analytics$/);
    expect(await b.page.getByTestId('tile-decisions').innerText()).toContain('4');
    expect(await b.page.getByTestId('tile-approval-rate').innerText()).toContain('75%');
    expect(await b.page.getByTestId('tile-quick').innerText()).toContain('33%'); // 1 of 3 approvals by people

    // time to decision: one row per tool and per channel, each with a visible p50 and p90 bar
    for (const [chart, row] of [
      ['chart-tool', 'wire_transfer'],
      ['chart-tool', 'submit_change'],
      ['chart-group', 'treasury'],
      ['chart-group', 'change-advisory'],
      ['chart-channel', 'inbox'],
      ['chart-channel', 'api'],
    ] as const) {
      expect(await barWidth(b, chart, row, 'p50'), `${chart} ${row}`).toBeGreaterThan(0);
      expect(await barWidth(b, chart, row, 'p90')).toBeGreaterThanOrEqual(await barWidth(b, chart, row, 'p50'));
    }
    // the change bob read for longer than the threshold took longer than the transfer he approved at once
    const p50 = async (row: string) =>
      Number(await b.page.locator(`[data-testid=chart-tool] [data-row="${row}"]`).getAttribute('data-p50-ms'));
    expect(await p50('submit_change')).toBeGreaterThan(QUICK_SECONDS * 1000);

    // outcomes: the transfers are all approved, the changes half
    expect(await b.page.locator('[data-testid=chart-outcomes] [data-row="wire_transfer"]').getAttribute('data-approval-rate')).toBe(
      '1.000',
    );
    expect(await b.page.locator('[data-testid=chart-outcomes] [data-row="submit_change"]').getAttribute('data-approval-rate')).toBe(
      '0.500',
    );
    expect(await barWidth(b, 'chart-outcomes', 'submit_change', 'denied')).toBeGreaterThan(0);

    // waiting now: the transfer left pending is under an hour old
    expect(Number(await b.page.locator('[data-testid=chart-pending] [data-row="under_1h"]').getAttribute('data-count'))).toBe(1);
    expect(await barWidth(b, 'chart-pending', 'under_1h', 'bar')).toBeGreaterThan(0);

    // approved without reading: bob's immediate approval, his read one, carol's from the API without the page
    for (const reading of ['quick', 'read', 'unopened']) {
      expect(Number(await b.page.locator(`[data-testid=chart-reading] [data-row="${reading}"]`).getAttribute('data-count'))).toBe(1);
      expect(await barWidth(b, 'chart-reading', reading, reading)).toBeGreaterThan(0);
    }
    await screenshot(b.page, 'approval-analytics');
  });

  it('an approver who is not a lead has no Analytics link and is refused the page', async () => {
    const c = await browserOf('carol');
    expect(await c.page.locator('header.top nav a:has-text("Analytics")').count()).toBe(0);
    const res = await c.page.goto(`${stack.urls.approverPage}/analytics`);
    expect(res?.status()).toBe(403);
    expect(await c.page.locator('h1').innerText()).toBe('Not for you');
  });
});
