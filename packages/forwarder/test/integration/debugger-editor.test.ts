import { describe, it } from 'mocha';
import { expect } from 'chai';
import { join } from 'node:path';
import { verifySignature } from '../../../eventrelay/src/webhooks';
import { useDebugger, signIn, SCREENSHOTS } from './browser';
import { basic, post, waitFor } from './helpers';

const ADMIN = 'debugger-editor-admin-token';
const SECRET = 'editor-shared-secret-90c2';
const HEADER_VALUE = 'Bearer editor-header-credential-4b7a';
const WRITE_KEY = 'editor-write-key';

describe('the debugger page: what it opens with, the Sources editor, its icon (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  const s = useDebugger((receiverUrl) => ({
    adminToken: ADMIN,
    storage: { type: 'memory' },
    sources: [{ name: 'app', writeKey: WRITE_KEY, destinations: { Webhooks: { webhooks: [{ url: `${receiverUrl}/app` }] } } }],
  }));
  /** Every answer of 400 or more the page got, and every request that failed: none is expected. */

  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${s.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as any;
    expect(response.status, JSON.stringify(json)).to.be.within(200, 299);
    return json;
  };
  const track = (messageId: string, event: string) => post(`${s.url}/v1/batch`, { batch: [{ type: 'track', userId: 'editor-user', event, messageId }] }, { Authorization: basic(WRITE_KEY) });
  const liveLines = (messageId: string) => s.page.locator(`#live-list li[data-message-id="${messageId}"]`);

  it('opens Live with the calls accepted before signing in, then adds new ones; each call shown once', async () => {
    for (const id of ['before-1', 'before-2', 'before-3']) expect((await track(id, `Before ${id}`)).status).to.equal(200);
    await waitFor(() => ['before-1', 'before-2', 'before-3'].every((id) => s.receiver.delivered.some((r) => r.json.messageId === id)), 'the calls made before signing in');
    await signIn(s.page, ADMIN, s.url);
    await s.page.locator('#live-status', { hasText: /^live$/ }).waitFor();
    for (const id of ['before-1', 'before-2', 'before-3']) await liveLines(id).first().waitFor();
    // Newest first, with the state the log gives each.
    const order = await s.page.locator('#live-list li').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-message-id')));
    expect(order).to.deep.equal(['before-3', 'before-2', 'before-1']);
    await liveLines('before-1').locator('.badge.delivered').waitFor();

    expect((await track('after-1', 'After')).status).to.equal(200);
    await liveLines('after-1').first().waitFor();
    await liveLines('after-1').locator('.badge.delivered').waitFor();
    // The stream opens again on a change of source: the log is read again, and nothing is doubled.
    await s.page.selectOption('#live-source', 'app');
    await s.page.locator('#live-status', { hasText: /^live$/ }).waitFor();
    await liveLines('after-1').first().waitFor();
    for (const id of ['before-1', 'before-2', 'before-3', 'after-1']) expect(await liveLines(id).count(), id).to.equal(1);
    await s.page.screenshot({ path: join(SCREENSHOTS, 'debugger-editor-live.png'), fullPage: true });
  });

  it('shows a source\'s URLs, header names and that a secret is set, never the secret or a header value', async () => {
    await admin('POST', '/admin/sources', { name: 'shop' });
    await admin('PUT', '/admin/sources/shop/destinations/Webhooks', {
      sharedSecret: SECRET,
      webhooks: [
        { url: `${s.receiver.url}/one?token=abc`, headers: { Authorization: HEADER_VALUE, 'X-Team': 'growth' } },
        { url: `${s.receiver.url}/two`, rateLimit: { perSecond: 20 } },
      ],
    });
    await s.page.click('button.tab[data-view=sources]');
    await s.page.locator('#sources-list tr', { hasText: 'shop' }).click();
    await s.page.locator('#editor-name', { hasText: /^shop$/ }).waitFor();
    expect(await s.page.inputValue('#wh-url-0')).to.equal(`${s.receiver.url}/one?[redacted]`);
    expect(await s.page.inputValue('#wh-url-1')).to.equal(`${s.receiver.url}/two`);
    expect(await s.page.inputValue('#wh-url-2')).to.equal('');
    expect(await s.page.inputValue('#wh-headers-0')).to.equal('Authorization: (set, not shown)\nX-Team: (set, not shown)');
    expect(await s.page.inputValue('#wh-rate-1')).to.equal('20');
    expect(await s.page.textContent('#wh-secret-state')).to.equal('secret set (not shown)');
    expect(await s.page.getAttribute('#wh-secret', 'placeholder')).to.equal('empty: keep the secret set');
    expect(await s.page.textContent('#view-sources')).not.to.contain('replaces the settings');
    // Neither value in the markup nor in any field's value.
    const values = await s.page.locator('input, textarea, select').evaluateAll((fields) => fields.map((f) => (f as unknown as { value: string }).value).join('\n'));
    for (const text of [await s.page.content(), values]) {
      expect(text).to.contain('X-Team');
      expect(text).not.to.contain(SECRET).and.not.to.contain('editor-header-credential').and.not.to.contain('growth').and.not.to.contain('token=abc');
    }
    await s.page.screenshot({ path: join(SCREENSHOTS, 'debugger-editor-sources.png'), fullPage: true });
  });

  it('a save after changing one field leaves the other URLs, the headers and the secret as they were', async () => {
    await s.page.fill('#wh-rate-1', '40');
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: /^saved$/ }).waitFor();
    const shown = (await admin('GET', '/admin/sources/shop')).destinations.Webhooks;
    expect(shown).to.deep.include({ enabled: true, signing: 'x-signature', hasSharedSecret: true });
    expect(shown.webhooks).to.deep.equal([
      { url: `${s.receiver.url}/one?[redacted]`, headerNames: ['Authorization', 'X-Team'], rateLimit: null, filter: null, transform: null, batch: null },
      { url: `${s.receiver.url}/two`, headerNames: [], rateLimit: { perSecond: 40 }, filter: null, transform: null, batch: null },
    ]);
    // The form shows the settings as saved, ready for the next change.
    expect(await s.page.inputValue('#wh-rate-1')).to.equal('40');
    expect(await s.page.inputValue('#wh-url-0')).to.equal(`${s.receiver.url}/one?[redacted]`);

    // What the receivers get proves what was kept: the query, both header values, the secret.
    const key = (await admin('POST', '/admin/sources/shop/write-keys', { graceSeconds: 0 })).writeKey as string;
    expect((await post(`${s.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'Kept', messageId: 'kept-1' }] }, { Authorization: basic(key) })).status).to.equal(200);
    const got = (path: string) => s.receiver.delivered.find((r) => r.path === path && r.json.messageId === 'kept-1');
    await waitFor(() => got('/one?token=abc') !== undefined && got('/two') !== undefined, 'the call at both URLs');
    const one = got('/one?token=abc')!;
    expect(one.headers.authorization).to.equal(HEADER_VALUE);
    expect(one.headers['x-team']).to.equal('growth');
    expect(verifySignature(one.body, one.headers['x-signature'] as string, SECRET)).to.equal(true);
    expect(verifySignature(got('/two')!.body, got('/two')!.headers['x-signature'] as string, SECRET)).to.equal(true);
  });

  it('removes a header by its line and the secret by its box, and nothing else', async () => {
    await s.page.fill('#wh-headers-0', 'Authorization: (set, not shown)\nX-New: fresh');
    await s.page.check('#wh-secret-remove');
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: /^saved$/ }).waitFor();
    const shown = (await admin('GET', '/admin/sources/shop')).destinations.Webhooks;
    expect(shown.hasSharedSecret).to.equal(false);
    expect(shown.webhooks.map((w: { headerNames: string[] }) => w.headerNames)).to.deep.equal([['Authorization', 'X-New'], []]);
    expect(shown.webhooks[1].rateLimit).to.deep.equal({ perSecond: 40 });
    expect(await s.page.textContent('#wh-secret-state')).to.equal('no secret: unsigned');
    expect(await s.page.locator('#wh-secret-remove-label').isHidden()).to.equal(true);
  });

  it('has an icon of its own (an SVG the CSP allows), and no load of the page meets a 404', async () => {
    await s.page.reload();
    await s.page.locator('#live-status', { hasText: /^live$/ }).waitFor();
    const href = await s.page.getAttribute('link[rel=icon]', 'href');
    expect(href).to.equal('/debugger/favicon.svg');
    const icon = await s.page.request.get(`${s.url}${href}`);
    expect(icon.status()).to.equal(200);
    expect(icon.headers()['content-type']).to.equal('image/svg+xml');
    expect(icon.headers()['content-security-policy']).to.match(/^default-src 'self'/);
    // Drawn in the page itself, under its CSP: a picture with a size, not a refused load.
    const width = await s.page.evaluate(
      (src) =>
        new Promise<number>((resolve, reject) => {
          const image = new (globalThis as any).Image();
          image.onload = () => resolve(image.naturalWidth as number);
          image.onerror = () => reject(new Error('the icon did not load'));
          image.src = src;
        }),
      href!,
    );
    expect(width).to.be.above(0);
    expect(s.failures).to.deep.equal([]);
    expect(s.pageErrors).to.deep.equal([]);
  });
});
