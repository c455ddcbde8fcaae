import { describe, it } from 'mocha';
import { expect } from 'chai';
import { useDebugger, signIn } from './browser';
import { basic, post, waitFor } from './helpers';

const ADMIN = 'debugger-endpoints-token';
/** A source name that would run as HTML if the page parsed it. */
const XSS = '<img src=x onerror=alert(1)>';

describe('the debugger page shows disabled URLs, why, and enables them (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  const s = useDebugger((receiverUrl) => ({
    adminToken: ADMIN,
    storage: { type: 'memory' },
    // 10 failed attempts over at least 1 ms disable a URL (the 24 h rule, shortened); retries an hour apart.
    delivery: { disableAfter: 1, minRetryDelay: 3_600_000, maxRetryDelay: 3_600_000 },
    sources: [
      { name: XSS, writeKey: 'k-dead', destinations: { Webhooks: { webhooks: [{ url: `${receiverUrl}/dead?token=t0ken` }] } } },
      { name: 'slow', writeKey: 'k-slow', destinations: { Webhooks: { webhooks: [{ url: `${receiverUrl}/slow` }] } } },
    ],
  }), { viewport: { width: 1280, height: 900 } });

  it('lists a disabled URL with why (as text), and its Enable button sends to it again', async () => {
    // 410 Gone: the URL is disabled at its first answer.
    s.receiver.failFirst('/dead?token=t0ken', 1_000_000, 410);
    expect((await post(`${s.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'd0' }] }, { Authorization: basic('k-dead') })).status).to.equal(200);
    await waitFor(async () => (await s.forwarder.stats()).failed === 1, 'the failure');
    await waitFor(async () => (await s.forwarder.endpoints(XSS))[0]!.disabled, 'the URL to be disabled');

    await signIn(s.page, ADMIN, s.url);
    await s.page.click('button.tab[data-view=endpoints]');
    const row = s.page.locator('#disabled tr', { hasText: '/dead' });
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    expect(cells[0]).to.equal(XSS);
    expect(cells[1]).to.equal(`${s.receiver.url}/dead?[redacted]`);
    expect(cells[3]).to.match(/^The receiver answered 410 Gone at \S+Z: it takes no more deliveries at this URL; last error: HTTP 410: /);
    expect(await s.page.content()).not.to.contain('t0ken');

    s.receiver.failFirst('/dead?token=t0ken', 0);
    await row.locator('button', { hasText: 'Enable' }).click();
    await s.page.locator('#disabled tr', { hasText: 'None.' }).waitFor();
    expect((await s.forwarder.endpoints(XSS))[0]!.disabled).to.equal(false);
    expect((await post(`${s.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'again' }] }, { Authorization: basic('k-dead') })).status).to.equal(200);
    await waitFor(() => s.receiver.delivered.some((r) => r.json.messageId === 'again'), 'a delivery to the enabled URL');
    expect(s.dialogs).to.deep.equal([]);
    expect(s.pageErrors).to.deep.equal([]);
  });

  it('shows when each retry is due in the attempts of a message', async () => {
    s.receiver.failFirst('/slow', 1_000_000, 503);
    expect((await post(`${s.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'Slow Retry', messageId: 'slow-1' }] }, { Authorization: basic('k-slow') })).status).to.equal(200);
    await waitFor(() => s.receiver.requests.some((r) => r.path === '/slow'), 'the first attempt');
    const headers = { Authorization: `Bearer ${ADMIN}` };
    const { id } = ((await (await fetch(`${s.url}/admin/messages?messageId=slow-1`, { headers })).json()) as { items: { id: number }[] }).items[0]!;
    let detail: { attemptLog: { nextAttemptAt: string | null }[] } | undefined;
    await waitFor(async () => {
      detail = (await (await fetch(`${s.url}/admin/deliveries/${id}`, { headers })).json()) as typeof detail;
      return detail!.attemptLog.length === 1;
    }, 'the attempt in the log');
    const due = detail!.attemptLog[0]!.nextAttemptAt!;
    await s.page.click('button.tab[data-view=search]');
    await s.page.fill('#search-user-id', 'u');
    await s.page.click('#search-form button[type=submit]');
    await s.page.locator('#search-results tr', { hasText: 'slow-1' }).first().click();
    await s.page.locator('#message-status', { hasText: /^retrying$/ }).waitFor();
    const cells = await s.page.locator('#attempts tr').first().locator('td').allTextContents();
    expect(cells[7]).to.equal('retry');
    expect(cells[8]).to.equal(due);
    expect(s.pageErrors).to.deep.equal([]);
  });
});
