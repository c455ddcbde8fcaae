import { describe, it, before } from 'mocha';
import { expect } from 'chai';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { useDebugger, signIn, SCREENSHOTS } from './browser';
import { basic, post, waitFor } from './helpers';

const ADMIN = 'debugger-schema-admin-token';
/** Script in an event name: shown as text, never run. */
const XSS_EVENT = '<img src=x onerror=alert(1)>';

describe('the debugger page: Schema (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  const s = useDebugger(() => ({ adminToken: ADMIN, storage: { type: 'memory' }, delivery: { minRetryDelay: 10, maxRetryDelay: 40 } }));
  let key: string;

  before(async () => {
    ({ writeKey: key } = await s.forwarder.createSource('shop'));
    await s.forwarder.setWebhooks('shop', { webhooks: [{ url: `${s.receiver.url}/shop` }] });
    const answer = await ingest([track('s-1', 'Order Completed'), track('s-2', 'Order Completed'), track('s-3', XSS_EVENT), { type: 'identify', userId: 'u', messageId: 's-4' }, { type: 'track', userId: 'u', messageId: 's-bad' }]);
    expect(answer.json.rejected).to.have.length(1);
    await waitFor(() => s.receiver.delivered.length === 4, 'the first calls delivered');
    // Counted once their outcomes are written, just after the receiver answered.
    await waitFor(async () => (await s.forwarder.usage()).sources[0]!.delivered === 4, 'the deliveries counted');
  });

  function track(messageId: string, event: string) {
    return { type: 'track', userId: 'u', event, messageId };
  }
  function ingest(batch: unknown[]) {
    return post(`${s.url}/v1/batch`, { batch }, { Authorization: basic(key) });
  }
  const shot = (name: string) => s.page.screenshot({ path: join(SCREENSHOTS, `debugger-schema-${name}.png`), fullPage: true });
  const row = (event: string) => s.page.locator('#schema-events tr').filter({ has: s.page.locator('td:nth-child(2)', { hasText: event }) });
  const typeRow = (type: string) => s.page.locator(`#schema-events tr[data-type="${type}"]`);
  const cells = (locator: ReturnType<Page['locator']>) => locator.locator('td').allTextContents();

  it('lists each event name and type with its count and times; a name carrying script stays text', async () => {
    await signIn(s.page, ADMIN, s.url);
    await s.page.click('button.tab[data-view=schema]');
    await row('Order Completed').waitFor();
    const order = await cells(row('Order Completed'));
    expect(order.slice(0, 3)).to.deep.equal(['track', 'Order Completed', '2']);
    expect(Date.parse(order[4]!)).to.be.at.least(Date.parse(order[3]!));
    expect(order[5]).to.equal('yes');
    expect((await cells(typeRow('identify'))).slice(0, 3)).to.deep.equal(['identify', '-', '1']);
    expect((await cells(row(XSS_EVENT))).slice(0, 2)).to.deep.equal(['track', XSS_EVENT]);
    expect(await s.page.locator('#schema-events img').count()).to.equal(0);
    expect(await s.page.locator('img[src=x]').count()).to.equal(0);
    await shot('listed');
  });

  it('shows the usage per source and per day', async () => {
    const today = new Date().toISOString().slice(0, 10);
    await s.page.locator('#usage-sources tr').first().waitFor();
    expect(await s.page.locator('#usage-sources tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))).to.deep.equal([
      ['shop', '4', '0', '1', '4', '0'],
    ]);
    expect(await cells(s.page.locator('#usage-days tr').first())).to.deep.equal([today, '4', '0', '1', '4', '0']);
    expect(await s.page.textContent('#usage-name')).to.equal('shop');
  });

  it('blocks an event with a click, which is then never forwarded, and allows it again with another', async () => {
    await row('Order Completed').locator('button', { hasText: 'Block' }).click();
    await s.page.locator('#schema-result', { hasText: 'blocked Order Completed' }).waitFor();
    await row('Order Completed').locator('td', { hasText: 'blocked' }).waitFor();
    expect((await s.forwarder.sourceSchema('shop')).blockedEvents).to.deep.equal(['Order Completed']);
    await ingest([track('b-1', 'Order Completed'), track('b-2', 'Other')]);
    await waitFor(() => s.receiver.delivered.some((r) => r.json.messageId === 'b-2'), 'the call not blocked');
    await waitFor(async () => (await s.forwarder.stats()).queueDepth === 0, 'the queue to drain');
    expect(s.receiver.delivered.some((r) => r.json.messageId === 'b-1')).to.equal(false);
    await shot('blocked');

    await s.page.click('#schema-refresh');
    await row('Order Completed').locator('button', { hasText: 'Allow' }).click();
    await s.page.locator('#schema-result', { hasText: 'allowed Order Completed' }).waitFor();
    await row('Order Completed').locator('td', { hasText: 'yes' }).waitFor();
    expect((await s.forwarder.sourceSchema('shop')).blockedEvents).to.deep.equal([]);
    await ingest([track('a-1', 'Order Completed')]);
    await waitFor(() => s.receiver.delivered.some((r) => r.json.messageId === 'a-1'), 'the call allowed again');
  });

  it('blocks and allows a whole type, and blocks a name carrying script as it is', async () => {
    await typeRow('identify').locator('button', { hasText: 'Block' }).click();
    await s.page.locator('#schema-controls dd', { hasText: 'identify' }).waitFor();
    expect((await s.forwarder.sourceSchema('shop')).blockedTypes).to.deep.equal(['identify']);
    await row(XSS_EVENT).locator('button', { hasText: 'Block' }).click();
    await row(XSS_EVENT).locator('td', { hasText: 'blocked' }).waitFor();
    expect((await s.forwarder.sourceSchema('shop')).blockedEvents).to.deep.equal([XSS_EVENT]);
    await s.page.locator('#schema-controls button', { hasText: 'Allow' }).click();
    await s.page.locator('#schema-result', { hasText: 'allowed identify calls' }).waitFor();
    expect((await s.forwarder.sourceSchema('shop')).blockedTypes).to.deep.equal([]);
    // Under a tracking plan, Allow takes a blocked name into the plan.
    await s.forwarder.setSourceSchema('shop', { allowedEvents: ['Order Completed'] });
    await s.page.click('#schema-refresh');
    await row(XSS_EVENT).locator('td', { hasText: 'not in the tracking plan' }).waitFor();
    await row(XSS_EVENT).locator('button', { hasText: 'Allow' }).click();
    await row(XSS_EVENT).locator('td', { hasText: 'yes' }).waitFor();
    expect(await s.forwarder.sourceSchema('shop')).to.deep.include({ blockedEvents: [], allowedEvents: ['Order Completed', XSS_EVENT] });
    expect(await s.page.locator('img[src=x]').count()).to.equal(0);
    await shot('types');
  });

  it('keeps each URL\'s filter when the Webhooks form is saved, and sets one from it', async () => {
    await s.forwarder.setWebhooks('shop', { webhooks: [{ url: `${s.receiver.url}/shop`, filter: { types: ['track', 'identify'], events: ['Order Completed'] } }] });
    await s.page.click('button.tab[data-view=sources]');
    await s.page.locator('#sources-list tr', { hasText: 'shop' }).click();
    await s.page.locator('#editor-current dd', { hasText: 'only types track, identify, 1 track event' }).waitFor();
    expect(await s.page.inputValue('#wh-types-0')).to.equal('track, identify');
    expect(await s.page.inputValue('#wh-events-0')).to.equal('Order Completed');
    await s.page.fill('#wh-url-0', `${s.receiver.url}/shop`);
    await s.page.fill('#wh-url-1', `${s.receiver.url}/people`);
    await s.page.fill('#wh-types-1', 'identify delete');
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: 'saved' }).waitFor();
    const filters = (await s.forwarder.listSources())[0]!.destinations.Webhooks!.webhooks.map((w) => w.filter);
    expect(filters).to.deep.equal([{ types: ['track', 'identify'], events: ['Order Completed'] }, { types: ['identify', 'delete'] }]);
    // A type that does not exist is refused, naming the field, and nothing changes.
    await s.page.fill('#wh-types-1', 'purchase');
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: '(webhooks[1].filter.types[0])' }).waitFor();
    expect((await s.forwarder.listSources())[0]!.destinations.Webhooks!.webhooks[1]!.filter).to.deep.equal({ types: ['identify', 'delete'] });
    expect(s.dialogs).to.deep.equal([]);
    expect(s.pageErrors).to.deep.equal([]);
  });
});
