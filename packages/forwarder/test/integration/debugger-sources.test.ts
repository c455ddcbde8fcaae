import { describe, it } from 'mocha';
import { expect } from 'chai';
import { join } from 'node:path';
import { verifySignature } from '../../../eventrelay/src/webhooks';
import { useDebugger, signIn, SCREENSHOTS } from './browser';
import { basic, post, waitFor } from './helpers';

const ADMIN = 'debugger-sources-admin-token';
/** Script in a source name, a URL and a header value: shown as text, never run. */
const XSS_NAME = '<img src=x onerror=alert(1)>';
const XSS_HEADER = '<b onmouseover=alert(2)>web</b>';
const SECRET = 'ui-shared-secret-6d1e';

describe('the debugger page: Sources (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  // Only the deletion asks (accepted); an alert would be script from a name or a URL running.
  const s = useDebugger(() => ({ adminToken: ADMIN, storage: { type: 'memory' }, delivery: { minRetryDelay: 10, maxRetryDelay: 40 } }), {
    grant: ['clipboard-read', 'clipboard-write'],
    confirm: true,
  });

  const shot = (name: string) => s.page.screenshot({ path: join(SCREENSHOTS, `debugger-sources-${name}.png`), fullPage: true });
  const row = (name: string) => s.page.locator('#sources-list tr', { has: s.page.locator('td', { hasText: name }) });
  const ingest = (key: string, messageId: string) => post(`${s.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'UI', messageId }] }, { Authorization: basic(key) });

  it('does nothing without the token: no Sources view, and the API refuses the page\'s calls', async () => {
    await s.page.goto(`${s.url}/debugger`);
    expect(await s.page.locator('#tabs').isHidden()).to.equal(true);
    expect(await s.page.locator('#view-sources').isHidden()).to.equal(true);
    const status = await s.page.evaluate(async () => {
      const response = await fetch('/admin/sources', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'sneaky' }) });
      return response.status;
    });
    expect(status).to.equal(401);
    expect(await s.forwarder.listSources()).to.deep.equal([]);
  });

  let firstKey = '';

  it('creates a source (script in its name shown as text), shows its key once with a copy button', async () => {
    await signIn(s.page, ADMIN);
    await s.page.click('button.tab[data-view=sources]');
    await s.page.fill('#source-name', XSS_NAME);
    await s.page.click('#source-create-form button[type=submit]');
    await s.page.locator('#key-box').waitFor();
    firstKey = await s.page.inputValue('#key-value');
    expect(firstKey).to.match(/^wk_[A-Za-z0-9_-]{43}$/);
    expect(await s.page.textContent('#key-source')).to.equal(XSS_NAME);
    await s.page.click('#key-copy');
    await s.page.locator('#key-copied', { hasText: 'copied' }).waitFor();
    expect(await s.page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).to.equal(firstKey);
    await row(XSS_NAME).waitFor();
    expect(await s.page.textContent('#editor-name')).to.equal(XSS_NAME);
    expect(await s.page.locator('img[src=x]').count()).to.equal(0);
    expect((await ingest(firstKey, 'ui-1')).status).to.equal(200);
    await shot('created');
  });

  it('sets up to 5 URLs with headers and a secret; shows the URL as text and never the secret or a header value', async () => {
    await s.page.fill('#wh-url-0', `${s.receiver.url}/ui?token=<script>alert(3)</script>`);
    await s.page.fill('#wh-headers-0', `X-Team: ${XSS_HEADER}`);
    await s.page.fill('#wh-url-1', `${s.receiver.url}/ui-second`);
    await s.page.fill('#wh-rate-1', '250');
    await s.page.fill('#wh-secret', SECRET);
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: 'saved' }).waitFor();
    await s.page.locator('#editor-current dd', { hasText: `${s.receiver.url}/ui?[redacted] (headers: X-Team)` }).waitFor();
    await s.page.locator('#editor-current dd', { hasText: `${s.receiver.url}/ui-second, at most 250 a second` }).waitFor();
    expect((await s.forwarder.listSources())[0]!.destinations.Webhooks!.webhooks.map((w) => w.rateLimit)).to.deep.equal([null, { perSecond: 250 }]);
    expect(await s.page.inputValue('#wh-secret')).to.equal('');
    const html = await s.page.content();
    expect(html).not.to.contain(SECRET).and.not.to.contain('onmouseover').and.not.to.contain(firstKey.slice(0, 20) + 'x');
    expect(await row(XSS_NAME).locator('td').allTextContents()).to.deep.equal([XSS_NAME, 'on', '2', `…${firstKey.slice(-4)}`]);
    // A bad URL is refused with its field, and nothing changes.
    await s.page.fill('#wh-url-0', 'ftp://example.test/x');
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: '(webhooks[0].url)' }).waitFor();
    expect((await s.forwarder.listSources())[0]!.destinations.Webhooks!.webhooks).to.have.length(2);
    await s.page.fill('#wh-url-0', `${s.receiver.url}/ui?token=<script>alert(3)</script>`);
    await s.page.fill('#wh-rate-1', '0');
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: '(webhooks[1].rateLimit.perSecond)' }).waitFor();
    expect((await s.forwarder.listSources())[0]!.destinations.Webhooks!.webhooks[1]!.rateLimit).to.deep.equal({ perSecond: 250 });

    expect((await ingest(firstKey, 'ui-2')).status).to.equal(200);
    await waitFor(() => s.receiver.delivered.some((r) => r.json.messageId === 'ui-2'), 'a delivery through the settings made on the page');
    const delivered = s.receiver.delivered.find((r) => r.json.messageId === 'ui-2')!;
    expect(delivered.headers['x-team']).to.equal(XSS_HEADER);
    expect(verifySignature(delivered.body, delivered.headers['x-signature'] as string, SECRET)).to.equal(true);
  });

  it('sends a test event and shows each URL\'s result', async () => {
    await s.page.selectOption('#wh-test-type', 'identify');
    await s.page.click('#wh-test');
    await s.page.locator('#wh-test-summary', { hasText: 'delivered (test-' }).waitFor();
    const rows = await s.page.locator('#wh-test-results tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(rows.map((r) => [r[0], r[1]])).to.deep.equal([
      [`${s.receiver.url}/ui?[redacted]`, '200'],
      [`${s.receiver.url}/ui-second`, '200'],
    ]);
    expect(s.receiver.delivered.some((r) => r.json.type === 'identify' && r.json.userId === 'test-user')).to.equal(true);
    await shot('tested');
  });

  it('switches the destination off and on', async () => {
    await s.page.click('#wh-toggle');
    await s.page.locator('#wh-toggle', { hasText: 'Switch on' }).waitFor();
    expect(await row(XSS_NAME).locator('td').nth(1).textContent()).to.equal('off');
    expect((await s.forwarder.listSources())[0]!.destinations.Webhooks!.enabled).to.equal(false);
    await s.page.click('#wh-toggle');
    await s.page.locator('#wh-toggle', { hasText: 'Switch off' }).waitFor();
    expect((await s.forwarder.listSources())[0]!.destinations.Webhooks!.enabled).to.equal(true);
  });

  it('sets delivery in order per user; a call waiting behind an earlier one of its user says which, with a link to it', async () => {
    await s.page.selectOption('#wh-ordering', 'user');
    await s.page.fill('#wh-rate-1', '250');
    await s.page.fill('#wh-secret', SECRET);
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: 'saved' }).waitFor();
    await s.page.locator('#editor-current dd', { hasText: 'per user' }).waitFor();
    expect((await s.forwarder.listSources())[0]!.destinations.Webhooks!.ordering).to.equal('user');
    // Both URLs fail for now: the user's first call is retried, its second waits behind it.
    s.receiver.failFirst('/ui?token=%3Cscript%3Ealert(3)%3C/script%3E', 1_000_000);
    s.receiver.failFirst('/ui-second', 1_000_000);
    await s.page.click('button.tab[data-view=live]');
    const batch = [
      { type: 'track', userId: 'ordered-user', event: 'First', messageId: 'ord-1' },
      { type: 'track', userId: 'ordered-user', event: 'Second', messageId: 'ord-2' },
    ];
    expect((await post(`${s.url}/v1/batch`, { batch }, { Authorization: basic(firstKey) })).status).to.equal(200);
    await waitFor(() => s.receiver.requests.some((r) => r.json.messageId === 'ord-1'), 'the first call\'s attempt');
    // Paused: each failed attempt of the first call redraws the list, which a click may miss on a busy machine.
    await s.page.locator('#live-list li', { hasText: 'Second' }).first().waitFor();
    await s.page.click('#live-pause');
    await s.page.locator('#live-list li', { hasText: 'Second' }).first().click();
    await s.page.locator('#message-waiting a', { hasText: 'ord-1' }).waitFor();
    await s.page.click('#message-waiting a');
    // The earlier call itself: it waits for none.
    await s.page.locator('#message-waiting').waitFor({ state: 'detached' });
    await s.page.locator('#message-fields dd', { hasText: /^ord-1$/ }).waitFor();
    expect(s.receiver.requests.some((r) => r.json.messageId === 'ord-2')).to.equal(false);
    s.receiver.failFirst('/ui?token=%3Cscript%3Ealert(3)%3C/script%3E', 0);
    s.receiver.failFirst('/ui-second', 0);
    await waitFor(() => s.receiver.delivered.some((r) => r.json.messageId === 'ord-2'), 'the second call once the first went');
    // Each URL got the calls, in order.
    for (const path of ['/ui?', '/ui-second']) {
      const order = s.receiver.delivered.filter((r) => r.json.userId === 'ordered-user' && r.path.startsWith(path)).map((r) => r.json.messageId);
      expect(order, path).to.deep.equal(['ord-1', 'ord-2']);
    }
    await s.page.click('button.tab[data-view=live]');
    await s.page.click('#live-pause');
    await s.page.locator('#live-pause', { hasText: 'Pause' }).waitFor();
    await s.page.click('button.tab[data-view=sources]');
    await waitFor(async () => {
      await row(XSS_NAME).click();
      return s.page.locator('#key-grace').isVisible();
    }, 'the source editor again');
  });

  it('sets the allowed origins and the ingestion limit; a refused value is named, and the settings are applied at once', async () => {
    await s.page.fill('#settings-origins', 'https://Shop.Example');
    await s.page.click('#settings-form button[type=submit]');
    await s.page.locator('#settings-result', { hasText: 'allowedOrigins[0]' }).waitFor();
    expect(await s.page.textContent('#settings-result')).to.contain('"https://shop.example"');
    await s.page.fill('#settings-origins', 'https://shop.example\nhttp://localhost:3000');
    await s.page.fill('#settings-rate', '5');
    await s.page.fill('#settings-burst', '20');
    await s.page.click('#settings-form button[type=submit]');
    await s.page.locator('#settings-result', { hasText: 'saved' }).waitFor();
    await s.page.locator('#editor-current dd', { hasText: 'https://shop.example, http://localhost:3000' }).waitFor();
    await s.page.locator('#editor-current dd', { hasText: '5 a second, burst 20' }).waitFor();
    const shown = (await s.forwarder.listSources())[0]!;
    expect(shown.allowedOrigins).to.deep.equal(['https://shop.example', 'http://localhost:3000']);
    expect(shown.ingestRateLimit).to.deep.equal({ perSecond: 5, burst: 20 });
    const preflight = await fetch(`${s.url}/v1/t`, { method: 'OPTIONS', headers: { Origin: 'http://localhost:3000', 'Access-Control-Request-Method': 'POST' } });
    expect(preflight.status).to.equal(204);
    await shot('settings');
  });

  it('rotates the key: the new one shown once, the old one refused after its grace (0 s here)', async () => {
    await s.page.fill('#key-grace', '0');
    await s.page.click('#key-rotate');
    await waitFor(async () => (await s.page.inputValue('#key-value')) !== firstKey, 'the new key');
    const next = await s.page.inputValue('#key-value');
    expect(next).to.match(/^wk_/);
    await s.page.locator('#source-keys tr').first().waitFor();
    expect(await s.page.locator('#source-keys tr').count()).to.equal(1);
    expect((await ingest(firstKey, 'ui-old')).status).to.equal(401);
    expect((await ingest(next, 'ui-new')).status).to.equal(200);
  });

  it('deletes the source after a confirmation', async () => {
    await s.page.click('#source-delete');
    await s.page.locator('#notice', { hasText: 'Deleted' }).waitFor();
    // The notice shows before the list is fetched again: wait for the list, not for a moment.
    await waitFor(async () => (await s.page.locator('#sources-list tr').count()) === 0, 'the sources list to be empty');
    expect(await s.forwarder.listSources()).to.deep.equal([]);
    expect(s.dialogs).to.have.length(1);
    expect(s.dialogs[0]).to.match(/^confirm: Delete the source/);
    expect(s.pageErrors).to.deep.equal([]);
  });

  it('forgets a key shown on screen when signing out', async () => {
    await s.page.fill('#source-name', 'another');
    await s.page.click('#source-create-form button[type=submit]');
    await s.page.locator('#key-box').waitFor();
    await s.page.click('#sign-out');
    expect(await s.page.locator('#key-box').isHidden()).to.equal(true);
    expect(await s.page.inputValue('#key-value')).to.equal('');
  });
});
