import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createForwarder } from '../../src/service';
import type { Forwarder, ForwarderOptions } from '../../src/service';
import type { ForwarderConfig } from '../../src/config';
import { startReceiver, useForSuite } from './helpers';
import type { Receiver } from './helpers';

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

/** A page in a fresh Chromium, with what it did wrong gathered for the tests to check. */
export interface BrowserPage {
  readonly browser: Browser;
  readonly context: BrowserContext;
  readonly page: Page;
  /** `type: message` of every dialog the page opened: a confirm is answered as `confirm` says, any other is dismissed. */
  readonly dialogs: string[];
  /** Every uncaught error of the page's script. */
  readonly pageErrors: string[];
  /** Every answer of 400 or more the page got, and every request that failed (but the live stream, which is cut when its source changes or the page goes). */
  readonly failures: string[];
  close(): Promise<void>;
}

export interface PageOptions {
  readonly viewport?: { readonly width: number; readonly height: number };
  /** Permissions (as `clipboard-read`) granted to `origin` (with openDebugger, the forwarder's). */
  readonly grant?: readonly string[];
  readonly origin?: string;
  /** Whether a `confirm` dialog is accepted (default: dismissed, as any other dialog). */
  readonly confirm?: boolean;
}

/** Launches Chromium and opens a page in a new context, listening to its dialogs, errors and failed requests. */
export async function openPage(options: PageOptions = {}): Promise<BrowserPage> {
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 1000 } });
  if (options.grant !== undefined) await context.grantPermissions([...options.grant], { origin: options.origin });
  const page = await context.newPage();
  const dialogs: string[] = [];
  const pageErrors: string[] = [];
  const failures: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void (options.confirm === true && dialog.type() === 'confirm' ? dialog.accept() : dialog.dismiss());
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('response', (response) => {
    if (response.status() >= 400) failures.push(`${response.status()} ${response.url()}`);
  });
  page.on('requestfailed', (request) => {
    if (new URL(request.url()).pathname !== '/admin/stream') failures.push(`failed ${request.url()}: ${request.failure()?.errorText}`);
  });
  return { browser, context, page, dialogs, pageErrors, failures, close: () => browser.close() };
}

/** Signs the debugger page in with the admin token (opening `url`/debugger first when given) and waits for its tabs. */
export async function signIn(page: Page, token: string, url?: string): Promise<void> {
  if (url !== undefined) await page.goto(`${url}/debugger`);
  await page.fill('#token', token);
  await page.click('#signin-form button[type=submit]');
  await page.waitForSelector('#tabs:not([hidden])');
}

/** A forwarder listening on 127.0.0.1 that delivers to a receiver, and a page in Chromium to open its debugger with. */
export interface DebuggerSession extends BrowserPage {
  readonly receiver: Receiver;
  readonly forwarder: Forwarder;
  /** The forwarder's base URL. */
  readonly url: string;
}

/**
 * Starts a receiver, a forwarder with the config `configure` makes from the receiver's URL, and a
 * page in Chromium (skipping the suite where Chromium is missing: call from a `before` hook, with
 * its `this`). `close` closes the browser, the forwarder and the receiver.
 */
export async function openDebugger(
  context: Mocha.Context,
  configure: (receiverUrl: string) => ForwarderConfig,
  options: PageOptions & { readonly forwarder?: ForwarderOptions } = {},
): Promise<DebuggerSession> {
  requireChromium(context);
  const receiver = await startReceiver();
  const forwarder = createForwarder(configure(receiver.url), options.forwarder);
  const { url } = await forwarder.listen({ port: 0 });
  const opened = await openPage({ ...options, origin: url });
  return {
    ...opened,
    receiver,
    forwarder,
    url,
    close: async () => {
      await opened.close();
      await forwarder.close();
      await receiver.close();
    },
  };
}

/** openDebugger for the suite this is called in (see useForSuite): skipped where Chromium is missing. */
export function useDebugger(
  configure: (receiverUrl: string) => ForwarderConfig,
  options: PageOptions & { readonly forwarder?: ForwarderOptions } = {},
): DebuggerSession {
  return useForSuite('the debugger session', (context) => openDebugger(context, configure, options), (session) => session.close());
}
