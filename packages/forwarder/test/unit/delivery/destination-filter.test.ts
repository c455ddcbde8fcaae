import { afterEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { ConfigError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { WebhookDestinationOptions } from '../../../src/delivery/destination';
import { toWebhookMessage } from '../../../../eventrelay/src/messages/webhook';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';
import type { Answer } from '../../../../../test/helpers/fake-transport';

const ORDERS = 'https://orders.example.com/hook';
const PEOPLE = 'https://people.example.com/hook';
const ALL = 'https://all.example.com/hook';

const body = (message: Parameters<typeof toWebhookMessage>[0]) => WebhookDestination.serialize(toWebhookMessage({ userId: 'u1', ...message }, { receivedAt: 0 }));
const order = body({ type: 'track', event: 'Order Completed', messageId: 'm-order' });
const signup = body({ type: 'track', event: 'Signed Up', messageId: 'm-signup' });
const identify = body({ type: 'identify', traits: { plan: 'pro' }, messageId: 'm-id' });
const deletion = body({ type: 'delete', userId: 'u1' });

const open: WebhookDestination[] = [];

function setup(webhooks: WebhookDestinationOptions['webhooks'], answer: (url: string) => Answer = () => 200) {
  const clock = new FakeClock();
  const transport = new FakeTransport((request) => answer(request.url.href));
  const destination = new WebhookDestination({ webhooks, transport }, { clock, random: () => 0.5 });
  open.push(destination);
  return { clock, transport, destination };
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
});

describe('WebhookDestination per-URL filters', () => {
  const webhooks = [
    { url: ORDERS, filter: { types: ['track'], events: ['Order Completed'] } },
    { url: PEOPLE, filter: { types: ['identify', 'delete'] } },
  ];

  it('sends each message only to the URLs whose filter takes it', async () => {
    const { transport, destination } = setup(webhooks);
    expect((await destination.attempt(order, { attempt: 1, firstAttemptAt: 0 })).status).to.equal('delivered');
    expect((await destination.attempt(identify, { attempt: 1, firstAttemptAt: 0 })).status).to.equal('delivered');
    expect((await destination.attempt(deletion, { attempt: 1, firstAttemptAt: 0 })).status).to.equal('delivered');
    const sent = (url: string) => transport.to(url).map((r) => (JSON.parse(Buffer.from(r.body).toString('utf8')) as { type: string }).type);
    expect(sent(ORDERS)).to.deep.equal(['track']);
    expect(sent(PEOPLE)).to.deep.equal(['identify', 'delete']);
  });

  it('holds any-one-2xx over the URLs that take a message: the others neither count nor are asked', async () => {
    const both = [
      { url: ORDERS, filter: { events: ['Order Completed'] } },
      { url: ALL },
      { url: PEOPLE, filter: { types: ['identify'] } },
    ];
    // The URL that does not take it would answer 200: it must not make the message delivered.
    const { clock, transport, destination } = setup(both, (url) => (url === PEOPLE ? 200 : 503));
    const result = await destination.attempt(order, { attempt: 1, firstAttemptAt: clock.now() });
    expect(result.status).to.equal('retry');
    expect(result.outcomes.map((o) => o.url)).to.deep.equal([ORDERS, ALL]);
    expect(transport.to(PEOPLE)).to.have.length(0);
    const identified = await destination.attempt(identify, { attempt: 1, firstAttemptAt: 0 });
    expect(identified.status).to.equal('delivered');
    // ORDERS' filter names events only: an identify goes there too (events narrow track calls alone).
    expect(identified.outcomes.map((o) => o.url)).to.deep.equal([ORDERS, ALL, PEOPLE]);
  });

  it('fails a message no URL takes at once, sending nothing, and says why', async () => {
    const { transport, destination } = setup(webhooks);
    const result = await destination.attempt(signup, { attempt: 1, firstAttemptAt: 0 });
    expect(result).to.deep.include({ status: 'failed', outcomes: [] });
    expect((result as { reason: string }).reason).to.match(/^Filtered: no webhook URL's filter takes this track message "Signed Up"/);
    expect(transport.requests).to.have.length(0);
    // deliver() (library use) gives the same answer, without retrying.
    const { transport: t2, destination: d2 } = setup(webhooks);
    expect(await d2.deliver(signup)).to.deep.include({ status: 'failed', attempt: 1 });
    expect(t2.requests).to.have.length(0);
  });

  it('waits, sending nothing, when the URLs that take a message are all skipped (disabled)', async () => {
    const { clock, transport, destination } = setup(webhooks);
    const result = await destination.attempt(order, { attempt: 3, firstAttemptAt: 0, skip: [0] });
    expect(result).to.deep.equal({ status: 'retry', attempt: 3, nextAttemptAt: clock.now() + 5000, outcomes: [] });
    expect(transport.requests).to.have.length(0);
  });

  it('sends to every URL with `everyUrl` (the test events), whatever the filters', async () => {
    const { transport, destination } = setup(webhooks);
    expect((await destination.attempt(signup, { attempt: 1, firstAttemptAt: 0, everyUrl: true })).status).to.equal('delivered');
    expect(transport.requests.map((r) => r.url.href)).to.deep.equal([ORDERS, PEOPLE]);
  });

  it('refuses a filter type that does not exist, naming the field', () => {
    const error = (() => {
      try {
        new WebhookDestination({ webhooks: [{ url: ALL }, { url: ORDERS, filter: { types: ['purchase'] } }] });
      } catch (e) {
        return e as ConfigError;
      }
      return undefined;
    })();
    expect(error).to.be.instanceOf(ConfigError);
    expect(error!.field).to.equal('webhooks[1].filter.types[0]');
  });
});
