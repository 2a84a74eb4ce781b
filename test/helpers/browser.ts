import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium package; CHROMIUM_PATH names another build. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// Compiled to dist/test/helpers/; screenshots go to the source tree's test/artifacts/ (not committed).
const ARTIFACTS = fileURLToPath(new URL('../../../test/artifacts/', import.meta.url));

export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM_PATH) ? undefined : `no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`;
}

/**
 * A real headless Chromium with no background traffic. Playwright gives each launch a fresh
 * temporary profile (its own --user-data-dir) and removes it on close.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface DashboardPage {
  page: Page;
  context: BrowserContext;
  /** Every request the page tried to send anywhere but `origin` (they are refused). */
  foreignRequests: string[];
  /** Everything the page's Content-Security-Policy blocked: `directive: what` for each. */
  cspViolations: string[];
}

/** A new tab (own sessionStorage) at 1280×800 that may talk to `origin` only, open at `path`; in the light or dark system setting. */
export async function openPage(browser: Browser, origin: string, path: string, colorScheme: 'light' | 'dark' = 'light'): Promise<DashboardPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme });
  const foreignRequests: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || url.startsWith('data:')) return route.continue();
    foreignRequests.push(url);
    return route.abort();
  });
  // Chromium fires securitypolicyviolation for each load, script, style or frame the policy blocks.
  const cspViolations: string[] = [];
  await context.exposeBinding('reportCspViolation', (_source, violation: string) => cspViolations.push(violation));
  await context.addInitScript(() =>
    document.addEventListener('securitypolicyviolation', (event) =>
      (window as unknown as { reportCspViolation(violation: string): void }).reportCspViolation(
        `${event.effectiveDirective} blocked ${event.blockedURI || 'inline'} at ${event.sourceFile}:${event.lineNumber} ${event.sample}`,
      ),
    ),
  );
  const page = await context.newPage();
  await page.goto(`${origin}${path}`);
  return { page, context, foreignRequests, cspViolations };
}

/** The dashboard in a new tab: see openPage. */
export const openDashboard = (browser: Browser, origin: string, colorScheme: 'light' | 'dark' = 'light') => openPage(browser, origin, '/dashboard', colorScheme);

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** A screen's heading (every screen has one h1). */
export const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name, exact: true });

/** A form field by its exact label. */
export const field = (page: Page, label: string) => page.getByLabel(label, { exact: true });
