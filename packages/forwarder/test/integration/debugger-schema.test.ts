import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { Forwarder } from '../../src/service';
import { openDebugger, signIn, SCREENSHOTS } from './browser';
import type { DebuggerSession } from './browser';
import { basic, post, waitFor } from './helpers';
import type { Receiver } from './helpers';

const ADMIN = 'debugger-schema-admin-token';
/** Script in an event name: shown as text, never run. */
const XSS_EVENT = '<img src=x onerror=alert(1)>';

describe('the debugger page: Schema (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  let session: DebuggerSession;
  let page: Page;
  let receiver: Receiver;
  let forwarder: Forwarder;
  let url: string;
  let key: string;
  let dialogs: string[];
  let pageErrors: string[];

  before(async function () {
    session = await openDebugger(this, () => ({ adminToken: ADMIN, storage: { type: 'memory' }, delivery: { minRetryDelay: 10, maxRetryDelay: 40 } }));
    ({ page, receiver, forwarder, url, dialogs, pageErrors } = session);
    ({ writeKey: key } = await forwarder.createSource('shop'));
    await forwarder.setWebhooks('shop', { webhooks: [{ url: `${receiver.url}/shop` }] });
    const answer = await ingest([track('s-1', 'Order Completed'), track('s-2', 'Order Completed'), track('s-3', XSS_EVENT), { type: 'identify', userId: 'u', messageId: 's-4' }, { type: 'track', userId: 'u', messageId: 's-bad' }]);
    expect(answer.json.rejected).to.have.length(1);
    await waitFor(() => receiver.delivered.length === 4, 'the first calls delivered');
    // Counted once their outcomes are written, just after the receiver answered.
    await waitFor(async () => (await forwarder.usage()).sources[0]!.delivered === 4, 'the deliveries counted');
  });

  after(() => session?.close());

  function track(messageId: string, event: string) {
    return { type: 'track', userId: 'u', event, messageId };
  }
  function ingest(batch: unknown[]) {
    return post(`${url}/v1/batch`, { batch }, { Authorization: basic(key) });
  }
  const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `debugger-schema-${name}.png`), fullPage: true });
  const row = (event: string) => page.locator('#schema-events tr').filter({ has: page.locator('td:nth-child(2)', { hasText: event }) });
  const typeRow = (type: string) => page.locator(`#schema-events tr[data-type="${type}"]`);
  const cells = (locator: ReturnType<Page['locator']>) => locator.locator('td').allTextContents();

  it('lists each event name and type with its count and times; a name carrying script stays text', async () => {
    await signIn(page, ADMIN, url);
    await page.click('button.tab[data-view=schema]');
    await row('Order Completed').waitFor();
    const order = await cells(row('Order Completed'));
    expect(order.slice(0, 3)).to.deep.equal(['track', 'Order Completed', '2']);
    expect(Date.parse(order[4]!)).to.be.at.least(Date.parse(order[3]!));
    expect(order[5]).to.equal('yes');
    expect((await cells(typeRow('identify'))).slice(0, 3)).to.deep.equal(['identify', '-', '1']);
    expect((await cells(row(XSS_EVENT))).slice(0, 2)).to.deep.equal(['track', XSS_EVENT]);
    expect(await page.locator('#schema-events img').count()).to.equal(0);
    expect(await page.locator('img[src=x]').count()).to.equal(0);
    await shot('listed');
  });

  it('shows the usage per source and per day', async () => {
    const today = new Date().toISOString().slice(0, 10);
    await page.locator('#usage-sources tr').first().waitFor();
    expect(await page.locator('#usage-sources tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))).to.deep.equal([
      ['shop', '4', '0', '1', '4', '0'],
    ]);
    expect(await cells(page.locator('#usage-days tr').first())).to.deep.equal([today, '4', '0', '1', '4', '0']);
    expect(await page.textContent('#usage-name')).to.equal('shop');
  });

  it('blocks an event with a click, which is then never forwarded, and allows it again with another', async () => {
    await row('Order Completed').locator('button', { hasText: 'Block' }).click();
    await page.locator('#schema-result', { hasText: 'blocked Order Completed' }).waitFor();
    await row('Order Completed').locator('td', { hasText: 'blocked' }).waitFor();
    expect((await forwarder.sourceSchema('shop')).blockedEvents).to.deep.equal(['Order Completed']);
    await ingest([track('b-1', 'Order Completed'), track('b-2', 'Other')]);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'b-2'), 'the call not blocked');
    await waitFor(async () => (await forwarder.stats()).queueDepth === 0, 'the queue to drain');
    expect(receiver.delivered.some((r) => r.json.messageId === 'b-1')).to.equal(false);
    await shot('blocked');

    await page.click('#schema-refresh');
    await row('Order Completed').locator('button', { hasText: 'Allow' }).click();
    await page.locator('#schema-result', { hasText: 'allowed Order Completed' }).waitFor();
    await row('Order Completed').locator('td', { hasText: 'yes' }).waitFor();
    expect((await forwarder.sourceSchema('shop')).blockedEvents).to.deep.equal([]);
    await ingest([track('a-1', 'Order Completed')]);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'a-1'), 'the call allowed again');
  });

  it('blocks and allows a whole type, and blocks a name carrying script as it is', async () => {
    await typeRow('identify').locator('button', { hasText: 'Block' }).click();
    await page.locator('#schema-controls dd', { hasText: 'identify' }).waitFor();
    expect((await forwarder.sourceSchema('shop')).blockedTypes).to.deep.equal(['identify']);
    await row(XSS_EVENT).locator('button', { hasText: 'Block' }).click();
    await row(XSS_EVENT).locator('td', { hasText: 'blocked' }).waitFor();
    expect((await forwarder.sourceSchema('shop')).blockedEvents).to.deep.equal([XSS_EVENT]);
    await page.locator('#schema-controls button', { hasText: 'Allow' }).click();
    await page.locator('#schema-result', { hasText: 'allowed identify calls' }).waitFor();
    expect((await forwarder.sourceSchema('shop')).blockedTypes).to.deep.equal([]);
    // Under a tracking plan, Allow takes a blocked name into the plan.
    await forwarder.setSourceSchema('shop', { allowedEvents: ['Order Completed'] });
    await page.click('#schema-refresh');
    await row(XSS_EVENT).locator('td', { hasText: 'not in the tracking plan' }).waitFor();
    await row(XSS_EVENT).locator('button', { hasText: 'Allow' }).click();
    await row(XSS_EVENT).locator('td', { hasText: 'yes' }).waitFor();
    expect(await forwarder.sourceSchema('shop')).to.deep.include({ blockedEvents: [], allowedEvents: ['Order Completed', XSS_EVENT] });
    expect(await page.locator('img[src=x]').count()).to.equal(0);
    await shot('types');
  });

  it('keeps each URL\'s filter when the Webhooks form is saved, and sets one from it', async () => {
    await forwarder.setWebhooks('shop', { webhooks: [{ url: `${receiver.url}/shop`, filter: { types: ['track', 'identify'], events: ['Order Completed'] } }] });
    await page.click('button.tab[data-view=sources]');
    await page.locator('#sources-list tr', { hasText: 'shop' }).click();
    await page.locator('#editor-current dd', { hasText: 'only types track, identify, 1 track event' }).waitFor();
    expect(await page.inputValue('#wh-types-0')).to.equal('track, identify');
    expect(await page.inputValue('#wh-events-0')).to.equal('Order Completed');
    await page.fill('#wh-url-0', `${receiver.url}/shop`);
    await page.fill('#wh-url-1', `${receiver.url}/people`);
    await page.fill('#wh-types-1', 'identify delete');
    await page.click('#wh-form button[type=submit]');
    await page.locator('#wh-result', { hasText: 'saved' }).waitFor();
    const filters = (await forwarder.listSources())[0]!.destinations.Webhooks!.webhooks.map((w) => w.filter);
    expect(filters).to.deep.equal([{ types: ['track', 'identify'], events: ['Order Completed'] }, { types: ['identify', 'delete'] }]);
    // A type that does not exist is refused, naming the field, and nothing changes.
    await page.fill('#wh-types-1', 'purchase');
    await page.click('#wh-form button[type=submit]');
    await page.locator('#wh-result', { hasText: '(webhooks[1].filter.types[0])' }).waitFor();
    expect((await forwarder.listSources())[0]!.destinations.Webhooks!.webhooks[1]!.filter).to.deep.equal({ types: ['identify', 'delete'] });
    expect(dialogs).to.deep.equal([]);
    expect(pageErrors).to.deep.equal([]);
  });
});
