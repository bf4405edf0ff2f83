// Debian's chromium, driven headless by playwright-core (browser downloads do not work here;
// .ci/run installs the chromium package). Screenshots go to test-artifacts/ (git-ignored).
import { mkdir } from 'node:fs/promises';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.VEIL_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = new URL('../../test-artifacts/portal/', import.meta.url).pathname;

export async function launchChromium(): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** A screenshot of the whole page at desktop (1280×800) and phone (390×844) sizes. */
export async function screenshots(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  const original = page.viewportSize();
  for (const [label, width, height] of [
    ['desktop', 1280, 800],
    ['phone', 390, 844],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.screenshot({ path: `${ARTIFACTS}${name}-${label}.png`, fullPage: true });
    // readable at this size: nothing wider than the viewport except inside scroll boxes
    // (a string: the project's TypeScript has no DOM types)
    const overflow = (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number;
    if (overflow > 1) throw new Error(`${name} at ${width}×${height} is ${overflow}px wider than the viewport`);
  }
  if (original) await page.setViewportSize(original);
}

/**
 * A desktop-sized page (1280×800) in a context of its own, whose steps fail within 10 s (well
 * inside a test's timeout, naming the locator waited for); the page's console errors and dialog
 * messages go into the lists given (dialogs are dismissed), for the test to assert none.
 */
export async function watchedPage(browser: Browser, seen: { consoleErrors: string[]; dialogs: string[] }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') seen.consoleErrors.push(m.text());
  });
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    void d.dismiss();
  });
  return { context, page };
}

/**
 * Signs `page` in on the portal at `portalUrl` through its sign-in form, as `clientId` with
 * `secret` (default `<clientId>-secret`, the test configurations' admins), and waits for the
 * overview.
 */
export async function signInAs(page: Page, portalUrl: string, clientId: string, secret = `${clientId}-secret`): Promise<void> {
  await page.goto(`${portalUrl}/admin`);
  await page.getByLabel('Client id').fill(clientId);
  await page.getByLabel('Client secret').fill(secret);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}
