import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { Analytics } from '../../../eventrelay/src/client/analytics';
import { openDebugger, SCREENSHOTS } from './browser';
import type { DebuggerSession } from './browser';
import { waitFor } from './helpers';
import type { Receiver } from './helpers';

const ADMIN = 'debugger-admin-token';
const XSS_IMG = '<img src=x onerror=alert(1)>';
const XSS_SCRIPT = '</script><script>alert(2)</script>';

describe('the debugger page in a real browser (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  let session: DebuggerSession;
  let page: Page;
  let receiver: Receiver;
  let url: string;
  let dataDir: string;
  let analytics: Analytics;
  let flakyClient: Analytics;
  let dialogs: string[];
  let pageErrors: string[];

  before(async function () {
    dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-debugger-'));
    session = await openDebugger(this, (receiverUrl) => ({
      adminToken: ADMIN,
      // Delivered bodies are kept here, so the message view can show one.
      storage: { keepDelivered: 600_000 },
      delivery: { minRetryDelay: 10, maxRetryDelay: 40, retryWindow: 150 },
      sources: [
        { name: 'web', writeKey: 'key-web', destinations: { Webhooks: { webhooks: [{ url: `${receiverUrl}/web` }] } } },
        { name: 'flaky', writeKey: 'key-flaky', destinations: { Webhooks: { webhooks: [{ url: `${receiverUrl}/flaky` }] } } },
      ],
    }), { forwarder: { dataDir }, viewport: { width: 1280, height: 900 } });
    ({ page, receiver, url, dialogs, pageErrors } = session);
    analytics = new Analytics({ writeKey: 'key-web', endpoint: url, flushAt: 1 });
    flakyClient = new Analytics({ writeKey: 'key-flaky', endpoint: url, flushAt: 1 });
  });

  after(async () => {
    await analytics?.closeAndFlush();
    await flakyClient?.closeAndFlush();
    await session?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `debugger-${name}.png`), fullPage: true });
  const liveItem = (text: string) => page.locator('#live-list li', { hasText: text });

  it('serves the page with a strict Content-Security-Policy and signs in without the token in the URL', async () => {
    const response = await page.goto(`${url}/debugger`);
    expect(response!.status()).to.equal(200);
    expect(response!.headers()['content-security-policy']).to.match(/^default-src 'self'/);
    await page.fill('#token', ADMIN);
    await shot('signin');
    await page.click('#signin-form button[type=submit]');
    await page.waitForSelector('#tabs:not([hidden])');
    await page.locator('#live-status', { hasText: /^live$/ }).waitFor();
    expect(page.url()).not.to.contain(ADMIN);
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('eventrelay.adminToken'))).to.equal(ADMIN);
    expect(await page.locator('#live-source option').allTextContents()).to.deep.equal(['all', 'web', 'flaky']);
  });

  it('shows a call from the client live, newest first', async () => {
    analytics.track({ userId: 'browser-user', event: 'Browser Live One' });
    await liveItem('Browser Live One').waitFor();
    // The event's name has a place of its own on the row.
    expect(await liveItem('Browser Live One').locator('.head .event').textContent()).to.equal('Browser Live One');
    analytics.track({ userId: 'browser-user', event: 'Browser Live Two' });
    await liveItem('Browser Live Two').waitFor();
    const texts = await page.locator('#live-list li').allTextContents();
    expect(texts.findIndex((t) => t.includes('Browser Live Two'))).to.be.lessThan(texts.findIndex((t) => t.includes('Browser Live One')));
    await page.locator('#live-list li', { hasText: 'Browser Live Two' }).locator('.badge.delivered').waitFor();
    // Filter by text, then by type.
    await page.fill('#live-text', 'Live One');
    expect(await page.locator('#live-list li').count()).to.equal(1);
    await page.fill('#live-text', '');
    await page.selectOption('#live-type', 'identify');
    expect(await page.locator('#live-list li').count()).to.equal(0);
    await page.selectOption('#live-type', '');
    await shot('live');
  });

  it('pauses the live view and catches up on resume', async () => {
    await page.click('#live-pause');
    analytics.track({ userId: 'browser-user', event: 'While Paused' });
    await waitFor(() => receiver.delivered.some((r) => r.json.event === 'While Paused'), 'the paused-time call to be delivered');
    expect(await liveItem('While Paused').count()).to.equal(0);
    await page.click('#live-pause');
    await liveItem('While Paused').waitFor();
  });

  it('shows a payload with HTML and </script> as text and runs nothing', async () => {
    analytics.track({ userId: 'browser-user', event: XSS_IMG, properties: { html: XSS_IMG, script: XSS_SCRIPT } });
    await liveItem(XSS_IMG).first().waitFor();
    expect(await page.locator('#live-list img').count()).to.equal(0);
    expect(await liveItem(XSS_IMG).first().textContent()).to.contain(XSS_SCRIPT);
    await liveItem(XSS_IMG).first().click();
    await page.waitForSelector('#view-message:not([hidden])');
    await page.locator('#message-body', { hasText: XSS_SCRIPT }).waitFor();
    expect(await page.locator('#message-body').textContent()).to.contain(XSS_IMG);
    expect(await page.locator('main img').count()).to.equal(0);
    expect(await page.locator('main script').count()).to.equal(0);
    expect(dialogs).to.deep.equal([]);
    expect(pageErrors).to.deep.equal([]);
  });

  it('shows the attempts of a failed delivery, and replay turns it delivered after the receiver recovers', async () => {
    await page.click('button.tab[data-view=live]');
    // The receiver says why: the message view shows its answer with each attempt, as text.
    receiver.failFirst('/flaky', 1000, 401, `bad signature ${XSS_IMG}`);
    flakyClient.track({ userId: 'browser-user', event: 'Will Fail' });
    await liveItem('Will Fail').locator('.badge.failed').waitFor();
    await liveItem('Will Fail').click();
    await page.locator('#message-status', { hasText: /^failed$/ }).waitFor();
    const rows = page.locator('#attempts tr');
    // At least one: the retry window is 150 ms, and on a loaded machine the first attempt may
    // already end past it, so how many retries fit in it is up to the scheduler's timing.
    expect(await rows.count()).to.be.at.least(1);
    const cells = await rows.first().locator('td').allTextContents();
    expect(cells[3]).to.equal(`${receiver.url}/flaky`);
    expect(cells[4]).to.equal('401');
    expect(cells[9]).to.equal(`bad signature ${XSS_IMG}`);
    expect(await page.locator('#attempts img').count()).to.equal(0);
    expect(await page.locator('#message-fields').textContent()).to.contain('Will Fail');
    expect(await page.locator('#replay').isDisabled()).to.equal(false);
    await shot('message-failed');

    receiver.failFirst('/flaky', 0);
    await page.click('#replay');
    await page.locator('#message-status', { hasText: /^delivered$/ }).waitFor();
    const last = await rows.last().locator('td').allTextContents();
    expect(last.slice(0, 2)).to.deep.equal(['2', '1']);
    expect(last[4]).to.equal('200');
    // What the receiver said with its 200 (delivered bodies, and so answers, are kept here).
    expect(last[9]).to.equal('ok');
    expect(receiver.delivered.filter((r) => r.json.event === 'Will Fail')).to.have.length(1);
    await shot('message');
  });

  it('searches by status and recovers the failed deliveries of a source since a time', async () => {
    await page.click('button.tab[data-view=live]');
    receiver.failFirst('/flaky', 1000, 503);
    flakyClient.track({ userId: 'search-user', event: 'Fails Again' });
    await liveItem('Fails Again').locator('.badge.failed').waitFor();
    await page.click('button.tab[data-view=search]');
    await page.selectOption('#search-status', 'failed');
    await page.fill('#search-user-id', 'search-user');
    await page.click('#search-form button[type=submit]');
    // The view may still show the unfiltered list for a moment: wait for the filtered answer.
    await waitFor(async () => (await page.locator('#search-results tr').count()) === 1, 'the search to show only the failed call of search-user');
    await page.locator('#search-results tr', { hasText: 'search-user' }).first().waitFor();
    expect((await page.locator('#search-results tr td').allTextContents())[4]).to.equal('Fails Again');
    await shot('search');

    // By event alone: the stored log answers (not the Live list), exact names only.
    await page.selectOption('#search-status', '');
    await page.fill('#search-user-id', '');
    await page.fill('#search-event', 'Browser Live One');
    await page.click('#search-form button[type=submit]');
    // The list of the search before stays until the answer comes: wait for the row of the event.
    await page.locator('#search-results tr', { hasText: 'Browser Live One' }).first().waitFor();
    await waitFor(async () => (await page.locator('#search-results tr').count()) === 1, 'the search by event to show the one call of that name');
    const found = await page.locator('#search-results tr td').allTextContents();
    expect(found.slice(2, 5)).to.deep.equal(['web', 'track', 'Browser Live One']);
    await page.fill('#search-event', 'Browser Live');
    await page.click('#search-form button[type=submit]');
    await waitFor(async () => (await page.locator('#search-results tr').count()) === 0, 'no call for a part of a name');
    await page.fill('#search-event', '');

    receiver.failFirst('/flaky', 0);
    await page.selectOption('#recover-source', 'flaky');
    const since = new Date(Date.now() - 60_000);
    const local = new Date(since.getTime() - since.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.fill('#recover-since', local);
    await page.click('#recover-form button[type=submit]');
    await page.locator('#recover-result', { hasText: /^1 failed deliveries queued again$/ }).waitFor();
    await waitFor(() => receiver.delivered.some((r) => r.json.event === 'Fails Again'), 'the recovered delivery');
  });

  it('shows endpoint health and the last hour as a chart', async () => {
    await page.click('button.tab[data-view=endpoints]');
    const flaky = page.locator('#endpoints tr', { hasText: '/flaky' });
    await flaky.waitFor();
    const cells = await flaky.locator('td').allTextContents();
    expect(cells[0]).to.equal('flaky');
    expect(cells[2]).to.equal('200');
    expect(cells[4]).to.equal('0');
    expect(Number(cells[5])).to.be.at.least(4);
    // One forwarder (SQLite): the picture is its own.
    await page.locator('#endpoints-scope', { hasText: '(last hour, 1 instance)' }).waitFor();
    await shot('endpoints');

    await page.click('button.tab[data-view=chart]');
    await page.locator('#chart-rates svg polyline[data-series=accepted]').waitFor();
    const points = (await page.locator('#chart-rates svg polyline[data-series=accepted]').getAttribute('points'))!.split(' ');
    expect(points).to.have.length(60);
    await page.locator('#chart-depth svg polyline[data-series=queueDepth]').waitFor({ state: 'attached' });
    await shot('chart');
    expect(dialogs).to.deep.equal([]);
    expect(pageErrors).to.deep.equal([]);
  });

  it('signs out and forgets the token', async () => {
    await page.click('#sign-out');
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('eventrelay.adminToken'))).to.equal(null);
    await page.waitForSelector('#view-signin:not([hidden])');
  });
});
