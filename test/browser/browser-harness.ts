// Scope: shared helpers for the browser tests: Debian's Chromium (installed with apt when missing,
// never a Playwright-downloaded browser) driven by playwright-core, one fresh profile per approver,
// screenshots under test-results/screenshots/, and inbox actions (sign in, open a request, decide).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { Config } from '../../src/config.js';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { startTestStack, testConfig } from '../support/stack-harness.js';

/** Debian's Chromium. */
export const CHROMIUM = '/usr/bin/chromium';
/** Where screenshots go (git-ignored). */
export const SCREENSHOT_DIR = join(PROJECT_ROOT, 'test-results', 'screenshots');

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Install Chromium with apt when it is missing (the test machines run as root). Throws with apt's output on failure. */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const apt = (args: string[]) =>
    execFileSync('apt-get', args, { stdio: 'pipe', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  try {
    apt(['install', '-y', '--no-install-recommends', 'chromium']);
  } catch {
    apt(['update']);
    apt(['install', '-y', '--no-install-recommends', 'chromium']);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is missing`);
}

/** One approver's browser: its own Chromium process and fresh `--user-data-dir` (so its own cookies). */
export interface ApproverBrowser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/** Launch Chromium with a fresh profile folder and open one page, `viewport` CSS pixels wide and high (default 1366 × 860). */
export async function openBrowser(viewport: { width: number; height: number } = { width: 1366, height: 860 }): Promise<ApproverBrowser> {
  ensureChromium();
  const profile = mkdtempSync(join(tmpdir(), 'countersign-chromium-'));
  // launchPersistentContext passes `profile` as --user-data-dir (launch() refuses that flag).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Save a full-page screenshot as `<dir>/<name>.png` (default `test-results/screenshots/`); returns the path. */
export async function screenshot(page: Page, name: string, dir = SCREENSHOT_DIR): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Sign in on the inbox's form; ends on the queue page. */
export async function signIn(page: Page, approverPageUrl: string, id: string, password: string): Promise<void> {
  await page.goto(approverPageUrl);
  await page.waitForURL(/\/approver\/login$/);
  await page.fill('#id', id);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL(/\/approver$/), page.click('button[type=submit]')]);
}

/** Sign in on the inbox's form as the stack's approver `id` (its password from `secrets.json`); ends on the queue page. */
export async function signInAs(page: Page, stack: Pick<Stack, 'urls' | 'secrets'>, id: string): Promise<void> {
  const approver = stack.secrets.approvers.find((a) => a.id === id);
  if (approver === undefined) throw new Error(`no approver ${id} in the stack's secrets`);
  await signIn(page, stack.urls.approverPage, id, approver.secret);
}

/** Open the request whose row summary contains `text` (e.g. the memo), from the queue. */
export async function openRequest(page: Page, approverPageUrl: string, text: string): Promise<void> {
  await page.goto(approverPageUrl);
  const row = page.locator('[data-testid=queue] tbody tr', { hasText: text });
  await row.locator('a.summary').click();
  await page.waitForURL(/\/approver\/requests\/ar_/);
}

/** Decide on the open request page with `comment`; resolves on the page shown after the redirect. */
export async function decideOnPage(page: Page, decision: 'approve' | 'deny', comment: string): Promise<void> {
  await page.fill('#comment', comment);
  await Promise.all([page.waitForURL(/flash=/), page.click(`button[name=decision][value=${decision}]`)]);
}

/** What {@link stackWithApprover} sets up: read its fields inside tests (they are set by `beforeAll`). */
export interface StackWithApprover {
  stack: Stack;
  /** The approver's browser, signed in to the stack's inbox. */
  browser: ApproverBrowser;
}

/**
 * Registers, in the calling test file, a `beforeAll` that starts a whole test stack (`config()`,
 * default `testConfig()`) and signs approver `id` (its password from the stack's secrets) in to its
 * inbox in a fresh browser, and an `afterAll` that closes both.
 */
export function stackWithApprover(id = 'bob', config: () => Config = () => testConfig()): StackWithApprover {
  const fixture = {} as StackWithApprover;
  beforeAll(async () => {
    fixture.stack = await startTestStack(config());
    fixture.browser = await openBrowser();
    await signInAs(fixture.browser.page, fixture.stack, id);
  });
  afterAll(async () => {
    await fixture.browser?.close();
    await fixture.stack?.stop();
  });
  return fixture;
}
