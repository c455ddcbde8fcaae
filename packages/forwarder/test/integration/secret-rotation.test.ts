import { describe, it } from 'mocha';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createForwarder } from '../../src/service';
import { verifySignature } from '../../../eventrelay/src/webhooks';
import { ConfigError } from '../../../eventrelay/src/errors';
import { basic, post, startReceiver, useStoreKind, waitFor } from './helpers';
import type { ReceivedRequest, Receiver } from './helpers';
import { FakeClock } from '../../../../test/helpers/fake-clock';

const TOKEN = 'rotation-admin-token';
const whsec = () => `whsec_${randomBytes(24).toString('base64')}`;

async function admin(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: JSON.parse(text), text };
}

/** Whether the standardwebhooks package accepts the request with `secret`. */
function accepts(secret: string, request: ReceivedRequest): boolean {
  try {
    new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`rotating a destination's shared secret with a grace (${kind} store)`, function () {
    this.timeout(60_000);
    const { cleanup, fresh } = useStoreKind(kind, 'eventrelay-rotation-', ['deliveries', 'messages', 'counters', 'sources', 'source_keys']);

    async function start(receiver: Receiver, secret: string, clock: FakeClock) {
      const storage = await fresh();
      const forwarder = createForwarder(
        {
          adminToken: TOKEN,
          storage,
          sources: [{ name: 'web', writeKey: 'k-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/hook` }], sharedSecret: secret, signing: 'both' } } }],
        },
        {},
        { clock },
      );
      cleanup.push(() => forwarder.close());
      const { url } = await forwarder.listen({ port: 0 });
      /** Sends one call and resolves with the request its receiver got. */
      const send = async (messageId: string): Promise<ReceivedRequest> => {
        expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId }] }, { Authorization: basic('k-web') })).status).to.equal(200);
        await waitFor(() => receiver.delivered.some((r) => r.json.messageId === messageId), `the delivery of ${messageId}`);
        return receiver.delivered.find((r) => r.json.messageId === messageId)!;
      };
      return { forwarder, url, send };
    }

    it('signs with both secrets during the grace (Standard Webhooks), X-Signature with the new one, and with the new one only after it', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      // The standardwebhooks package checks the timestamp against its own clock: start at the real time.
      const clock = new FakeClock(Date.now());
      const [oldSecret, newSecret] = [whsec(), whsec()];
      const { url, send } = await start(receiver, oldSecret, clock);

      const before = await send('before');
      expect([accepts(oldSecret, before), accepts(newSecret, before)]).to.deep.equal([true, false]);

      const rotated = await admin(url, 'POST', '/admin/sources/web/destinations/Webhooks/secret', { sharedSecret: newSecret, graceSeconds: 60 });
      expect(rotated.status).to.equal(200);
      expect(rotated.json).to.deep.equal({ source: 'web', signing: 'both', previousSecretsValidUntil: new Date(clock.now() + 60_000).toISOString() });
      expect(rotated.text).not.to.contain(newSecret.slice(6, 20));

      const during = await send('during');
      expect(String(during.headers['webhook-signature']).split(' ')).to.have.length(2);
      expect([accepts(oldSecret, during), accepts(newSecret, during)]).to.deep.equal([true, true]);
      expect(verifySignature(during.body, during.headers['x-signature'] as string, newSecret)).to.equal(true);
      expect(verifySignature(during.body, during.headers['x-signature'] as string, oldSecret)).to.equal(false);
      // The receiver helper given both secrets, as the guide says to do first, accepts it either way.
      expect(verifySignature(during.body, during.headers['x-signature'] as string, [oldSecret, newSecret])).to.equal(true);

      clock.skip(60_000);
      const after = await send('after');
      expect(String(after.headers['webhook-signature']).split(' ')).to.have.length(1);
      expect([accepts(oldSecret, after), accepts(newSecret, after)]).to.deep.equal([false, true]);
    });

    it('a PATCH that leaves the secret out keeps the grace (both secrets sign); one that names a secret ends it', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      const clock = new FakeClock(Date.now());
      const [oldSecret, newSecret, third] = [whsec(), whsec(), whsec()];
      const { url, send } = await start(receiver, oldSecret, clock);
      expect((await admin(url, 'POST', '/admin/sources/web/destinations/Webhooks/secret', { sharedSecret: newSecret, graceSeconds: 60 })).status).to.equal(200);
      const patched = await admin(url, 'PATCH', '/admin/sources/web/destinations/Webhooks', { webhooks: [{ from: 0, headers: { 'X-Team': 'a' } }], ordering: 'user' });
      expect(patched.status).to.equal(200);
      const kept = await send('patched-keeps');
      expect(kept.headers['x-team']).to.equal('a');
      expect([accepts(oldSecret, kept), accepts(newSecret, kept)]).to.deep.equal([true, true]);
      expect((await admin(url, 'PATCH', '/admin/sources/web/destinations/Webhooks', { sharedSecret: third })).status).to.equal(200);
      const replaced = await send('patched-replaces');
      expect([accepts(oldSecret, replaced), accepts(newSecret, replaced), accepts(third, replaced)]).to.deep.equal([false, false, true]);
    });

    it('a PUT of the destination ends the grace; bad input is refused naming the field, and no answer shows a secret', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      const clock = new FakeClock(Date.now());
      const [oldSecret, newSecret] = [whsec(), whsec()];
      const { forwarder, url, send } = await start(receiver, oldSecret, clock);
      expect((await forwarder.rotateSharedSecret('web', newSecret)).previousSecretsValidUntil).to.equal(new Date(clock.now() + 86_400_000).toISOString());
      const put = await admin(url, 'PUT', '/admin/sources/web/destinations/Webhooks', { webhooks: [{ url: `${receiver.url}/hook` }], sharedSecret: newSecret, signing: 'both' });
      expect(put.status).to.equal(200);
      const request = await send('after-put');
      expect([accepts(oldSecret, request), accepts(newSecret, request)]).to.deep.equal([false, true]);

      const refused: [unknown, number, string][] = [
        [{}, 400, 'sharedSecret'],
        [{ sharedSecret: '   ' }, 400, 'sharedSecret'],
        [{ sharedSecret: 'whsec_!!hidden-part!!' }, 400, 'sharedSecret'],
        [{ sharedSecret: whsec(), graceSeconds: -1 }, 400, 'graceSeconds'],
        [{ sharedSecret: whsec(), graceSeconds: 31 * 86_400 }, 400, 'graceSeconds'],
        [{ sharedSecret: whsec(), keep: true }, 400, 'keep'],
      ];
      for (const [body, status, field] of refused) {
        const answer = await admin(url, 'POST', '/admin/sources/web/destinations/Webhooks/secret', body);
        expect([answer.status, answer.json.error.field], answer.text).to.deep.equal([status, field]);
        expect(answer.text).not.to.contain('hidden-part');
      }
      const unknown = await admin(url, 'POST', '/admin/sources/nope/destinations/Webhooks/secret', { sharedSecret: whsec() });
      expect(unknown.status).to.equal(404);
      // The same through the forwarder's method: a refusal is a typed error with the field.
      let error: unknown;
      await forwarder.rotateSharedSecret('web', whsec(), { graceSeconds: -5 }).catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(ConfigError).with.property('field', 'graceSeconds');
      // Nothing changed by the refusals: still signed with the new secret alone.
      const still = await send('still');
      expect([accepts(oldSecret, still), accepts(newSecret, still)]).to.deep.equal([false, true]);
    });
  });
}
