import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { Forwarder } from '../../src/service';
import type { Operations } from '../../src/observability/operations';
import { usePostgres } from '../../../../test/helpers/postgres';
import { openPage, requireChromium, signIn, SCREENSHOTS } from './browser';
import type { BrowserPage } from './browser';
import { basic, post, useReceiver, startTwo, waitFor } from './helpers';

const ADMIN = 'debugger-cluster-token';

describe('the debugger page of one instance shows the others’ work (two forwarders on PostgreSQL, Chromium)', function () {
  this.timeout(120_000);
  const db = usePostgres();
  let opened: BrowserPage;
  let page: Page;
  const receiver = useReceiver();
  let a: Forwarder;
  let b: Forwarder;
  let urlA: string;
  let urlB: string;
  let pageErrors: string[];

  before(async function () {
    requireChromium(this);
    const config = {
      adminToken: ADMIN,
      storage: { type: 'postgres' as const, url: db.url, poolSize: 3 },
      sources: [{ name: 'web', writeKey: 'key-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/web` }] } } }],
    };
    ({ a, b, urlA, urlB } = await startTwo(config));
    opened = await openPage({ viewport: { width: 1280, height: 900 } });
    ({ page, pageErrors } = opened);
  });

  after(async () => {
    await opened?.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  const send = (messageId: string, properties: object = {}) =>
    post(`${urlA}/v1/batch`, { batch: [{ type: 'track', userId: 'u-page', event: 'Paged', messageId, properties }] }, { Authorization: basic('key-web') });

  it('lists live the calls another instance accepted, and says when a body was too large to relay', async () => {
    await signIn(page, ADMIN, urlB);
    await page.locator('#live-status', { hasText: /^live$/ }).waitFor();
    const relay = (a as unknown as { parts: { lifecycle: { ops: Operations } } }).parts.lifecycle.ops.cluster!.relay;
    await waitFor(() => relay.wanted, 'A to hear that B has a subscriber');
    expect((await send('page-small', { plan: 'pro' })).status).to.equal(200);
    expect((await send('page-large', { blob: 'x'.repeat(9000) })).status).to.equal(200);
    const small = page.locator('#live-list li[data-message-id="page-small"]');
    await small.locator('.badge.delivered').waitFor();
    expect(await small.locator('.body').textContent()).to.contain('"plan":"pro"');
    const large = page.locator('#live-list li[data-message-id="page-large"]');
    await large.locator('.badge.delivered').waitFor();
    expect(await large.locator('.body').textContent()).to.match(/^Body too large to relay from the instance that accepted it/);
  });

  it('shows the endpoint health and the chart over both instances, and how many there are', async () => {
    // A writes its view within a second; the page asks when its tab opens.
    await waitFor(async () => {
      const o = (await (await fetch(`${urlB}/admin/overview`, { headers: { Authorization: `Bearer ${ADMIN}` } })).json()) as any;
      return o.instances === 2 && o.stats.endpoints[0]?.attempts === 2;
    }, 'B’s overview to include A’s view');
    await page.click('button.tab[data-view=endpoints]');
    await page.locator('#endpoints-scope', { hasText: '(last hour, 2 instances)' }).waitFor();
    const cells = await page.locator('#endpoints tr', { hasText: '/web' }).locator('td').allTextContents();
    expect([cells[0], cells[2], cells[5]]).to.deep.equal(['web', '200', '2']);
    await page.click('button.tab[data-view=chart]');
    await page.locator('#chart-scope', { hasText: '(per minute, 2 instances)' }).waitFor();
    const names = await page.locator('#stats dt').allTextContents();
    const values = await page.locator('#stats dd').allTextContents();
    const stats = Object.fromEntries(names.map((name, i) => [name, values[i]]));
    expect(stats).to.include({ instances: '2', accepted: '2', delivered: '2' });
    await page.screenshot({ path: join(SCREENSHOTS, 'debugger-cluster.png'), fullPage: true });
    expect(pageErrors).to.deep.equal([]);
  });
});
