import { describe, it } from 'mocha';
import { expect } from 'chai';
import { join } from 'node:path';
import { verifySignature } from '../../../eventrelay/src/webhooks';
import { useDebugger, signIn, SCREENSHOTS } from './browser';
import { basic, post, waitFor } from './helpers';

const ADMIN = 'debugger-transform-admin-token';
const SECRET = 'transform-editor-secret-51d0';
const WRITE_KEY = 'transform-editor-write-key';

const TO_CHAT = 'function transform(message) {\n  return { text: message.event + " by " + message.userId };\n}';

describe('the debugger page: a URL\'s transform in the Sources editor, tried on a recent call (Chromium, 127.0.0.1)', function () {
  this.timeout(120_000);
  const s = useDebugger(
    (receiverUrl) => ({
      adminToken: ADMIN,
      // Delivered bodies kept, so that "a recent call" is the real message.
      storage: { type: 'memory', keepDelivered: 60_000 },
      sources: [{ name: 'app', writeKey: WRITE_KEY, destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: `${receiverUrl}/chat` }, { url: `${receiverUrl}/raw` }] } } }],
    }),
  );

  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${s.url}${path}`, { method, headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return (await response.json()) as any;
  };
  const track = (messageId: string, event: string) => post(`${s.url}/v1/batch`, { batch: [{ type: 'track', userId: 'editor-user', event, messageId }] }, { Authorization: basic(WRITE_KEY) });

  it('tries the code typed for a URL on the source\'s newest call, showing the output, and where code does not compile', async () => {
    expect((await track('recent-1', 'Order Completed')).status).to.equal(200);
    await waitFor(() => s.receiver.delivered.some((r) => r.json.messageId === 'recent-1'), 'the call to be delivered');
    await signIn(s.page, ADMIN, s.url);
    await s.page.click('button.tab[data-view=sources]');
    await s.page.locator('#sources-list tr', { hasText: 'app' }).click();
    await s.page.locator('#editor-name', { hasText: /^app$/ }).waitFor();
    expect(await s.page.inputValue('#wh-transform-0')).to.equal('');

    await s.page.fill('#wh-transform-0', TO_CHAT);
    await s.page.click('#tf-test');
    await s.page.locator('#tf-summary', { hasText: 'on call recent-1' }).waitFor();
    expect(JSON.parse((await s.page.textContent('#tf-output'))!)).to.deep.equal({ text: 'Order Completed by editor-user' });

    await s.page.fill('#wh-transform-0', 'function transform(message) {\n  return { text: ;\n}');
    await s.page.click('#tf-test');
    await s.page.locator('#tf-summary', { hasText: /^failed$/ }).waitFor();
    expect(await s.page.textContent('#tf-output')).to.match(/SyntaxError.*\(line 2, column \d+\)/);

    await s.page.fill('#wh-transform-0', 'function transform(message) { return message.properties.missing.deeper; }');
    await s.page.click('#tf-test');
    await s.page.locator('#tf-summary', { hasText: /^failed$/ }).waitFor();
    expect(await s.page.textContent('#tf-output')).to.match(/^transform_failed: TypeError/);

    // A URL without code says so.
    await s.page.selectOption('#tf-url', { value: '1' });
    await s.page.click('#tf-test');
    await s.page.locator('#tf-summary', { hasText: 'URL 2 has no transform' }).waitFor();
  });

  it('saves the transform with the form; code that does not compile is refused with its line and nothing changes', async () => {
    await s.page.fill('#wh-transform-0', 'function transform(m) {\n  return {;\n}');
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: /line 2, column/ }).waitFor();
    expect((await admin('GET', '/admin/sources/app')).destinations.Webhooks.webhooks[0].transform).to.equal(null);

    await s.page.fill('#wh-transform-0', TO_CHAT);
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: /^saved$/ }).waitFor();
    const shown = (await admin('GET', '/admin/sources/app')).destinations.Webhooks;
    expect(shown.webhooks.map((w: { transform: unknown }) => w.transform)).to.deep.equal([{ code: TO_CHAT, timeoutMs: 100 }, null]);
    expect(shown.hasSharedSecret).to.equal(true);
    // The form shows it as saved.
    expect(await s.page.inputValue('#wh-transform-0')).to.equal(TO_CHAT);

    expect((await track('after-save', 'Signed Up')).status).to.equal(200);
    const chat = () => s.receiver.delivered.find((r) => r.path === '/chat' && r.json.text === 'Signed Up by editor-user');
    await waitFor(() => chat() !== undefined && s.receiver.delivered.some((r) => r.path === '/raw' && r.json.messageId === 'after-save'), 'the reshaped call and the message as it is');
    expect(verifySignature(chat()!.body, chat()!.headers['x-signature'] as string, SECRET)).to.equal(true);
    await s.page.screenshot({ path: join(SCREENSHOTS, 'debugger-transform.png'), fullPage: true });

    // Emptied and saved: removed.
    await s.page.fill('#wh-transform-0', '');
    await s.page.click('#wh-form button[type=submit]');
    await s.page.locator('#wh-result', { hasText: /^saved$/ }).waitFor();
    expect((await admin('GET', '/admin/sources/app')).destinations.Webhooks.webhooks[0].transform).to.equal(null);
  });
});
