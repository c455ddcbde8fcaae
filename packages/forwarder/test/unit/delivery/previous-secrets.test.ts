import { afterEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { ConfigError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { WebhookDestinationOptions } from '../../../src/delivery/destination';
import { verifySignature } from '../../../../eventrelay/src/webhooks';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';

const OLD = 'old-secret-3c1a';
const NEW = 'new-secret-7b2e';
const open: WebhookDestination[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
});

function setup(options: Partial<WebhookDestinationOptions>) {
  // The standardwebhooks package checks timestamps against its own clock: start at the real time.
  const clock = new FakeClock(Date.now());
  const transport = new FakeTransport();
  const destination = new WebhookDestination({ webhooks: [{ url: 'https://a.example.com/hook' }], transport, ...options }, { clock });
  open.push(destination);
  return { clock, transport, destination };
}

const accepts = (secret: string, request: FakeTransport['requests'][number]) => {
  try {
    new Webhook(secret, { format: 'raw' }).verify(Buffer.from(request.body).toString('utf8'), request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};

describe('WebhookDestination previousSecrets', () => {
  it('signs Standard Webhooks with a replaced secret too until its grace ends; X-Signature with the current secret only', async () => {
    const { clock, transport, destination } = setup({ sharedSecret: NEW, signing: 'both', previousSecrets: [{ secret: OLD, until: Date.now() + 1000 }] });
    await destination.attempt('{"a":1}', { attempt: 1, firstAttemptAt: clock.now(), id: 'm1' });
    const [during] = transport.requests;
    expect(String(during!.headers['webhook-signature']).split(' ')).to.have.length(2);
    expect([accepts(OLD, during!), accepts(NEW, during!)]).to.deep.equal([true, true]);
    expect(verifySignature(Buffer.from(during!.body), during!.headers['X-Signature']!, NEW)).to.equal(true);
    await clock.tick(1000);
    await destination.attempt('{"a":2}', { attempt: 1, firstAttemptAt: clock.now(), id: 'm2' });
    const after = transport.requests[1]!;
    expect([accepts(OLD, after), accepts(NEW, after)]).to.deep.equal([false, true]);
  });

  it('refuses a malformed list, naming the field and never the secret', () => {
    const cases: [unknown, string][] = [
      ['old', 'previousSecrets'],
      [[{ secret: '', until: 1 }], 'previousSecrets[0].secret'],
      [[{ secret: 'hidden-1', until: 'soon' }], 'previousSecrets[0].until'],
      [[{ secret: 'whsec_??hidden-2', until: 1 }], 'previousSecrets[0].secret'],
    ];
    for (const [previousSecrets, field] of cases) {
      let error: unknown;
      try {
        setup({ sharedSecret: NEW, signing: 'standard-webhooks', previousSecrets: previousSecrets as never });
      } catch (e) {
        error = e;
      }
      expect(error, field).to.be.instanceOf(ConfigError).with.property('field', field);
      expect((error as Error).message).not.to.match(/hidden/);
    }
  });
});
