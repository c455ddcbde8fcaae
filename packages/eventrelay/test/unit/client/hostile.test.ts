import { expect } from 'chai';
import fc from 'fast-check';
import { EventRelayError, SerializationError, ValidationError } from '../../../src/errors';
import type { Analytics } from '../../../src/client/analytics';
import type { MessageType } from '../../../src/messages/calls';
import { createTestClient } from '../../../../../test/helpers/client';
import { flushMicrotasks } from '../../../../../test/helpers/fake-clock';

const BASE: Record<MessageType, Record<string, unknown>> = {
  identify: { userId: 'u1', traits: { plan: 'pro' } },
  track: { userId: 'u1', event: 'Clicked', properties: { n: 1 } },
  page: { anonymousId: 'a1', name: 'Home', properties: { path: '/' } },
  screen: { userId: 'u1', name: 'Feed' },
  group: { userId: 'u1', groupId: 'g1', traits: {} },
  alias: { userId: 'u2', previousId: 'u1' },
};
const TYPES = Object.keys(BASE) as MessageType[];
const FIELDS = ['userId', 'anonymousId', 'event', 'messageId', 'timestamp', 'context', 'properties', 'traits', 'integrations', 'groupId', 'previousId'];

const boom = () => {
  throw new Error('hostile');
};

function circular(): Record<string, unknown> {
  const value: Record<string, unknown> = { a: 1 };
  value.self = value;
  return value;
}

function hostileDate(): Date {
  const date = new Date('2020-01-01T00:00:00Z');
  for (const method of ['getTime', 'toISOString', 'toJSON', 'valueOf'] as const) Object.defineProperty(date, method, { value: boom });
  return date;
}

function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** Values that break naive code in one way each; made fresh for every run (a revoked Proxy is single-use). */
const VALUES: Record<string, () => unknown> = {
  bigint: () => 10n,
  circular,
  throwingToJSON: () => ({ toJSON: boom }),
  hostileDate,
  proxyAroundDate: () => new Proxy(new Date(), {}),
  revokedProxy: revoked,
  throwingOwnKeys: () => new Proxy({}, { ownKeys: boom, getOwnPropertyDescriptor: boom }),
  throwingGetPrototype: () => new Proxy({}, { getPrototypeOf: boom }),
  symbol: () => Symbol('s'),
  fn: () => boom,
  nested: () => ({ inner: { list: [1, { big: 1n }] } }),
  farFuture: () => new Date('+010000-01-01T00:00:00Z'),
  longString: () => 'x'.repeat(40_000),
};

/** The whole params object is hostile. */
const PARAMS: Record<string, (base: Record<string, unknown>) => unknown> = {
  proxy: (base) => new Proxy({ ...base }, {}),
  throwingGetTrap: () => new Proxy({}, { get: boom }),
  revoked: () => revoked(),
  null: () => null,
  array: () => [],
  string: () => 'track',
  number: () => 7,
  date: () => new Date(),
};

type Case = { type: MessageType; field?: string; value?: string; getter?: boolean; params?: string };

const fieldCase = fc.record({
  type: fc.constantFrom(...TYPES),
  field: fc.constantFrom(...FIELDS),
  value: fc.constantFrom(...Object.keys(VALUES)),
  getter: fc.boolean(),
});
const paramsCase = fc.record({ type: fc.constantFrom(...TYPES), params: fc.constantFrom(...Object.keys(PARAMS)) });

function build(c: Case): unknown {
  const base = BASE[c.type];
  if (c.params !== undefined) return PARAMS[c.params]!(base);
  const params: Record<string, unknown> = { ...base };
  if (c.getter) {
    // A getter that throws when read: the snapshot must read it inside its try.
    Object.defineProperty(params, c.field!, { get: boom, enumerable: true });
  } else {
    params[c.field!] = VALUES[c.value!]!();
  }
  return params;
}

function call(analytics: Analytics, type: MessageType, params: unknown, callback: (error?: EventRelayError) => void): void {
  (analytics[type] as (p: unknown, cb: unknown) => void).call(analytics, params, callback);
}

describe('Analytics with hostile input', () => {
  it('property: never throws, calls back exactly once, and the client keeps working', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fieldCase, paramsCase), { minLength: 1, maxLength: 6 }), async (cases) => {
        const { analytics, transport } = createTestClient({ flushAt: 3 });
        const counts = cases.map(() => 0);
        const errors: (EventRelayError | undefined)[] = [];
        cases.forEach((c, i) => {
          expect(() =>
            call(analytics, c.type, build(c), (error) => {
              counts[i]!++;
              errors[i] = error;
            }),
          ).not.to.throw();
        });
        await analytics.flush();
        await flushMicrotasks();
        expect(counts).to.deep.equal(cases.map(() => 1));
        for (const error of errors) if (error !== undefined) expect(error).to.be.instanceOf(EventRelayError);
        // Still working: a plain call after the hostile ones is delivered.
        const before = transport.messages.length;
        let delivered: EventRelayError | undefined | 'not called' = 'not called';
        analytics.track({ userId: 'after', event: 'Still Works' }, (error) => (delivered = error));
        await analytics.flush();
        expect(delivered).to.equal(undefined);
        expect(transport.messages.slice(before).map((m) => m.event)).to.deep.equal(['Still Works']);
        expect(analytics.pending).to.equal(0);
      }),
      { numRuns: 300 },
    );
  });

  it('reads each field once: a getter that throws on its second read is harmless', async () => {
    const { analytics, transport } = createTestClient();
    let reads = 0;
    const params = {
      event: 'Once',
      get userId() {
        reads++;
        if (reads > 1) throw new Error('read twice');
        return 'u1';
      },
    };
    let result: unknown = 'not called';
    analytics.track(params, (error) => (result = error));
    await analytics.flush();
    expect(reads).to.equal(1);
    expect(result).to.equal(undefined);
    expect(transport.messages[0]).to.include({ userId: 'u1', event: 'Once' });
  });

  it('turns a throwing getter into a ValidationError naming the field, with the thrown error as cause', async () => {
    const { analytics } = createTestClient();
    const thrown = new Error('getter bug');
    const params = Object.defineProperty({ userId: 'u1' }, 'event', {
      get() {
        throw thrown;
      },
      enumerable: true,
    });
    const error = await new Promise<EventRelayError | undefined>((resolve) => analytics.track(params as never, resolve));
    expect(error).to.be.instanceOf(ValidationError);
    expect((error as ValidationError).field).to.equal('event');
    expect(error?.cause).to.equal(thrown);
  });

  it('refuses a revoked Proxy and a BigInt with typed errors', async () => {
    const { analytics } = createTestClient();
    const first = await new Promise<EventRelayError | undefined>((resolve) => analytics.track(revoked() as never, resolve));
    expect(first).to.be.instanceOf(ValidationError);
    const second = await new Promise<EventRelayError | undefined>((resolve) =>
      analytics.track({ userId: 'u', event: 'E', properties: { n: 1n } }, resolve),
    );
    expect(second).to.be.instanceOf(SerializationError);
    expect(second?.message).to.match(/BigInt/);
  });

  it('refuses a message nested too deeply for JSON with a SerializationError', async () => {
    const { analytics } = createTestClient();
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 200_000; i++) deep = { a: deep };
    const error = await new Promise<EventRelayError | undefined>((resolve) =>
      analytics.track({ userId: 'u', event: 'E', properties: deep }, resolve),
    );
    expect(error).to.be.instanceOf(SerializationError);
    expect(error?.message).to.match(/nested too deeply/);
  });
});
