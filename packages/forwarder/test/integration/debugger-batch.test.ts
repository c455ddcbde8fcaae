import { describe, it } from 'mocha';
import { expect } from 'chai';
import { join } from 'node:path';
import { useDebugger, signIn, SCREENSHOTS } from './browser';

const ADMIN = 'debugger-batch-admin-token';
const DEFAULTS = { maxBytes: 524_288, maxWaitMs: 1000 };

describe('the debugger page: a URL\'s batch in the Sources editor (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  const s = useDebugger((receiverUrl) => ({
    adminToken: ADMIN,
    storage: { type: 'memory' },
    sources: [{ name: 'bulk', writeKey: 'batch-editor-write-key', destinations: { Webhooks: { webhooks: [{ url: `${receiverUrl}/one` }, { url: `${receiverUrl}/many`, rateLimit: { perSecond: 30 } }] } } }],
  }));

  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${s.url}${path}`, { method, headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await response.json()) as any;
    expect(response.status, JSON.stringify(json)).to.be.within(200, 299);
    return json;
  };
  /** Each URL's batch as GET /admin/sources/{name} shows it. */
  const batches = async (name: string): Promise<unknown[]> => (await admin('GET', `/admin/sources/${name}`)).destinations.Webhooks.webhooks.map((w: { batch: unknown }) => w.batch);
  const save = async (result: string | RegExp) => {
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: result }).waitFor();
  };
  const boxes = async (i: number) => [await s.page.inputValue(`#wh-batch-events-${i}`), await s.page.inputValue(`#wh-batch-bytes-${i}`), await s.page.inputValue(`#wh-batch-wait-${i}`)];

  it('sets a batch on one URL (PATCH): GET shows it with its defaults, the form and the summary too, the other URL untouched', async () => {
    await signIn(s.page, ADMIN, s.url);
    await s.page.click('button.tab[data-view=sources]');
    await s.page.locator('#sources-list tr', { hasText: 'bulk' }).click();
    await s.page.locator('#editor-name', { hasText: /^bulk$/ }).waitFor();
    expect(await boxes(1)).to.deep.equal(['', '', '']);

    await s.page.fill('#wh-batch-events-1', '100');
    await save(/^saved$/);
    expect(await batches('bulk')).to.deep.equal([null, { maxEvents: 100, ...DEFAULTS }]);
    const shown = (await admin('GET', '/admin/sources/bulk')).destinations.Webhooks.webhooks;
    expect(shown[1].rateLimit).to.deep.equal({ perSecond: 30 });
    // The form shows it as saved, defaults filled, and the summary names it.
    expect(await boxes(1)).to.deep.equal(['100', '524288', '1000']);
    expect(await boxes(0)).to.deep.equal(['', '', '']);
    await s.page.locator('#editor-current dd', { hasText: `${s.receiver.url}/many, at most 30 a second; batched: up to 100 calls, 524288 bytes, 1000 ms` }).waitFor();
    await s.page.screenshot({ path: join(SCREENSHOTS, 'debugger-batch.png'), fullPage: true });
  });

  it('changes one field of it, and removes it by emptying its boxes', async () => {
    await s.page.fill('#wh-batch-wait-1', '0');
    await s.page.fill('#wh-batch-bytes-1', '2048');
    await save(/^saved$/);
    expect(await batches('bulk')).to.deep.equal([null, { maxEvents: 100, maxBytes: 2048, maxWaitMs: 0 }]);
    expect(await boxes(1)).to.deep.equal(['100', '2048', '0']);

    for (const box of ['events', 'bytes', 'wait']) await s.page.fill(`#wh-batch-${box}-1`, '');
    await save(/^saved$/);
    expect(await batches('bulk')).to.deep.equal([null, null]);
    expect((await admin('GET', '/admin/sources/bulk')).destinations.Webhooks.webhooks[1].rateLimit).to.deep.equal({ perSecond: 30 });
  });

  it('a value out of range is refused naming its field, and nothing changes', async () => {
    await s.page.fill('#wh-batch-events-0', '4001');
    await save('(webhooks[0].batch.maxEvents)');
    expect(await batches('bulk')).to.deep.equal([null, null]);
    // A max wait without max events: the API names the missing field.
    await s.page.fill('#wh-batch-events-0', '');
    await s.page.fill('#wh-batch-wait-0', '500');
    await save('(webhooks[0].batch.maxEvents)');
    expect(await batches('bulk')).to.deep.equal([null, null]);
  });

  it('sets a batch on the URL of a source without a destination yet (PUT)', async () => {
    await admin('POST', '/admin/sources', { name: 'fresh' });
    await s.page.click('button.tab[data-view=sources]');
    await s.page.locator('#sources-list tr', { hasText: 'fresh' }).click();
    await s.page.locator('#editor-name', { hasText: /^fresh$/ }).waitFor();
    await s.page.fill('#wh-url-0', `${s.receiver.url}/fresh`);
    await s.page.fill('#wh-batch-events-0', '4000');
    await s.page.fill('#wh-batch-bytes-0', '1048576');
    await s.page.fill('#wh-batch-wait-0', '60000');
    await save(/^saved$/);
    expect(await batches('fresh')).to.deep.equal([{ maxEvents: 4000, maxBytes: 1_048_576, maxWaitMs: 60_000 }]);
    expect(s.pageErrors).to.deep.equal([]);
  });
});
