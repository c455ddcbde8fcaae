import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';

/** Debian's Chromium (browser downloads do not work here): .ci/run installs it with apt-get. */
const CHROMIUM = '/usr/bin/chromium';
/** Where the browser tests leave their screenshots. */
export const SCREENSHOTS = resolve('.tmp/screenshots');

/**
 * Skips the suite (with a line on stdout) when Chromium is missing, or fails it under CI=true,
 * where .ci/run must have installed it. Call first in a `before` hook, with its `this`.
 */
export function requireChromium(context: Mocha.Context): void {
  if (existsSync(CHROMIUM)) return;
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: .ci/run installs it with apt-get (apt-get install -y chromium)`);
  console.log(`      SKIPPED: ${CHROMIUM} is missing; install it with \`apt-get install -y chromium\` to run the browser tests`);
  context.skip();
}

/** Headless Chromium with a fresh temporary profile and no background networking (this machine has none). */
export function launchChromium(): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
