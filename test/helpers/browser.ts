// Debian's chromium, driven headless by playwright-core (browser downloads do not work here;
// .ci/run installs the chromium package). Screenshots go to test-artifacts/ (git-ignored).
import { mkdir } from 'node:fs/promises';
import { chromium, type Browser, type Page } from 'playwright-core';

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
  for (const [label, width, height] of [['desktop', 1280, 800], ['phone', 390, 844]] as const) {
    await page.setViewportSize({ width, height });
    await page.screenshot({ path: `${ARTIFACTS}${name}-${label}.png`, fullPage: true });
    // readable at this size: nothing wider than the viewport except inside scroll boxes
    // (a string: the project's TypeScript has no DOM types)
    const overflow = (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number;
    if (overflow > 1) throw new Error(`${name} at ${width}×${height} is ${overflow}px wider than the viewport`);
  }
  if (original) await page.setViewportSize(original);
}
