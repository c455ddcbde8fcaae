import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import type { Forwarder } from '../../src/service';
import { openDebugger, signIn } from './browser';
import type { DebuggerSession } from './browser';
import { basic, post, waitFor } from './helpers';
import type { Receiver } from './helpers';

const ADMIN = 'debugger-endpoints-token';
/** A source name that would run as HTML if the page parsed it. */
const XSS = '<img src=x onerror=alert(1)>';

describe('the debugger page shows disabled URLs, why, and enables them (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  let session: DebuggerSession;
  let page: Page;
  let receiver: Receiver;
  let forwarder: Forwarder;
  let url: string;
  let dialogs: string[];
  let pageErrors: string[];

  before(async function () {
    session = await openDebugger(this, (receiverUrl) => ({
      adminToken: ADMIN,
      storage: { type: 'memory' },
      // 10 failed attempts over at least 1 ms disable a URL (the 24 h rule, shortened); retries an hour apart.
      delivery: { disableAfter: 1, minRetryDelay: 3_600_000, maxRetryDelay: 3_600_000 },
      sources: [
        { name: XSS, writeKey: 'k-dead', destinations: { Webhooks: { webhooks: [{ url: `${receiverUrl}/dead?token=t0ken` }] } } },
        { name: 'slow', writeKey: 'k-slow', destinations: { Webhooks: { webhooks: [{ url: `${receiverUrl}/slow` }] } } },
      ],
    }), { viewport: { width: 1280, height: 900 } });
    ({ page, receiver, forwarder, url, dialogs, pageErrors } = session);
  });

  after(() => session?.close());

  it('lists a disabled URL with why (as text), and its Enable button sends to it again', async () => {
    // 410 Gone: the URL is disabled at its first answer.
    receiver.failFirst('/dead?token=t0ken', 1_000_000, 410);
    expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'd0' }] }, { Authorization: basic('k-dead') })).status).to.equal(200);
    await waitFor(async () => (await forwarder.stats()).failed === 1, 'the failure');
    await waitFor(async () => (await forwarder.endpoints(XSS))[0]!.disabled, 'the URL to be disabled');

    await signIn(page, ADMIN, url);
    await page.click('button.tab[data-view=endpoints]');
    const row = page.locator('#disabled tr', { hasText: '/dead' });
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    expect(cells[0]).to.equal(XSS);
    expect(cells[1]).to.equal(`${receiver.url}/dead?[redacted]`);
    expect(cells[3]).to.match(/^The receiver answered 410 Gone at \S+Z: it takes no more deliveries at this URL; last error: HTTP 410: /);
    expect(await page.content()).not.to.contain('t0ken');

    receiver.failFirst('/dead?token=t0ken', 0);
    await row.locator('button', { hasText: 'Enable' }).click();
    await page.locator('#disabled tr', { hasText: 'None.' }).waitFor();
    expect((await forwarder.endpoints(XSS))[0]!.disabled).to.equal(false);
    expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'again' }] }, { Authorization: basic('k-dead') })).status).to.equal(200);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'again'), 'a delivery to the enabled URL');
    expect(dialogs).to.deep.equal([]);
    expect(pageErrors).to.deep.equal([]);
  });

  it('shows when each retry is due in the attempts of a message', async () => {
    receiver.failFirst('/slow', 1_000_000, 503);
    expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'Slow Retry', messageId: 'slow-1' }] }, { Authorization: basic('k-slow') })).status).to.equal(200);
    await waitFor(() => receiver.requests.some((r) => r.path === '/slow'), 'the first attempt');
    const headers = { Authorization: `Bearer ${ADMIN}` };
    const { id } = ((await (await fetch(`${url}/admin/messages?messageId=slow-1`, { headers })).json()) as { items: { id: number }[] }).items[0]!;
    let detail: { attemptLog: { nextAttemptAt: string | null }[] } | undefined;
    await waitFor(async () => {
      detail = (await (await fetch(`${url}/admin/deliveries/${id}`, { headers })).json()) as typeof detail;
      return detail!.attemptLog.length === 1;
    }, 'the attempt in the log');
    const due = detail!.attemptLog[0]!.nextAttemptAt!;
    await page.click('button.tab[data-view=search]');
    await page.fill('#search-user-id', 'u');
    await page.click('#search-form button[type=submit]');
    await page.locator('#search-results tr', { hasText: 'slow-1' }).first().click();
    await page.locator('#message-status', { hasText: /^retrying$/ }).waitFor();
    const cells = await page.locator('#attempts tr').first().locator('td').allTextContents();
    expect(cells[7]).to.equal('retry');
    expect(cells[8]).to.equal(due);
    expect(pageErrors).to.deep.equal([]);
  });
});
