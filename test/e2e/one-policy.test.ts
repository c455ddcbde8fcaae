import { expect } from 'chai';
import fc from 'fast-check';
import { parseIngestBody } from '../../packages/forwarder/src/routing/ingest';
import type { MessageType } from '../../packages/eventrelay/src/messages/calls';
import { eventTimeMs, MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS, timestampMs } from '../../packages/eventrelay/src/messages/event-time';
import { validateParams } from '../../packages/eventrelay/src/messages/rules';
import { serializeWebhookMessage, toWebhookMessage } from '../../packages/eventrelay/src/messages/webhook';
import { parseWebhookMessage } from '../../packages/eventrelay/src/webhooks/parse';
import { createTestClient } from '../helpers/client';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** RFC 3339-like strings around the edges: any year 0000-9999, offsets, fractions, lowercase, out-of-range fields. */
const timestampString = fc
  .record({
    year: fc.integer({ min: 0, max: 9999 }),
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.integer({ min: 0, max: 32 }),
    hour: fc.integer({ min: 0, max: 24 }),
    minute: fc.integer({ min: 0, max: 60 }),
    second: fc.integer({ min: 0, max: 60 }),
    fraction: fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined }),
    zone: fc.oneof(fc.constant('Z'), fc.constant('z'), fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([s, h, m]) => `${s}${pad(h)}:${pad(m)}`)),
    t: fc.constantFrom('T', 't'),
  })
  .map(
    (p) =>
      `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}${p.t}${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}` +
      `${p.fraction === undefined ? '' : `.${p.fraction}`}${p.zone}`,
  );

const anyDate = fc.date({ min: new Date(MIN_TIMESTAMP_MS - 86_400_000 * 400), max: new Date(MAX_TIMESTAMP_MS + 86_400_000 * 400), noInvalidDate: false });
const anyTimestamp = fc.oneof(timestampString, anyDate, anyDate.map((d) => (Number.isNaN(d.getTime()) ? 'x' : d.toISOString())), fc.string());

describe('one policy for client, forwarder and receiver', () => {
  it('property: every timestamp the rules accept gives a webhook that parseWebhookMessage accepts, as YYYY-MM-DDTHH:mm:ss.sssZ', () => {
    fc.assert(
      fc.property(anyTimestamp, (timestamp) => {
        const accepted = validateParams('track', { userId: 'u', event: 'E', timestamp }) === undefined;
        expect(accepted).to.equal(timestampMs(timestamp) !== undefined);
        if (!accepted) {
          expect(() => toWebhookMessage({ type: 'track', userId: 'u', event: 'E', timestamp })).to.throw();
          return;
        }
        const body = serializeWebhookMessage(toWebhookMessage({ type: 'track', userId: 'u', event: 'E', timestamp }));
        const parsed = parseWebhookMessage(body);
        expect(parsed.timestamp).to.match(ISO_MS);
      }),
      { numRuns: 2000 },
    );
  });

  it('property: a derived event time (originalTimestamp and sentAt) is always in range', () => {
    fc.assert(
      fc.property(anyDate, anyDate, fc.integer({ min: MIN_TIMESTAMP_MS, max: MAX_TIMESTAMP_MS }), (original, sentAt, receivedAt) => {
        if (timestampMs(original) === undefined) return;
        const ms = eventTimeMs({ originalTimestamp: original }, { receivedAt, sentAt });
        expect(ms).to.be.within(MIN_TIMESTAMP_MS, MAX_TIMESTAMP_MS);
      }),
    );
  });

  // Mostly valid values with edge cases mixed in, so most generated calls reach the forwarder.
  const weird = fc.oneof(fc.constant(''), fc.double(), fc.constant(null), fc.boolean(), fc.constant(Number.NaN));
  const id = fc.oneof(
    { arbitrary: fc.string({ minLength: 1, maxLength: 12 }), weight: 6 },
    { arbitrary: fc.integer(), weight: 3 },
    { arbitrary: weird, weight: 1 },
  );
  const text = fc.oneof({ arbitrary: fc.string({ minLength: 1, maxLength: 12 }), weight: 8 }, { arbitrary: fc.oneof(fc.constant(''), fc.integer(), fc.constant(null)), weight: 1 });
  const object = fc.oneof(
    { arbitrary: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 })), weight: 8 },
    { arbitrary: fc.oneof(fc.constant(null), fc.array(fc.integer()), fc.string()), weight: 1 },
  );
  const params = fc.record(
    {
      userId: id,
      anonymousId: id,
      event: text,
      name: text,
      category: text,
      groupId: id,
      previousId: id,
      messageId: fc.oneof({ arbitrary: fc.string({ minLength: 1, maxLength: 210 }), weight: 6 }, { arbitrary: fc.oneof(fc.constant(''), fc.integer(), fc.constant(null)), weight: 1 }),
      timestamp: fc.oneof({ arbitrary: anyDate, weight: 4 }, { arbitrary: anyTimestamp, weight: 1 }),
      context: object,
      integrations: object,
      properties: object,
      traits: object,
    },
    { requiredKeys: ['userId', 'event', 'groupId', 'previousId'] },
  );

  it('property: a message the client accepts is never refused by the forwarder', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<MessageType>('identify', 'track', 'page', 'screen', 'group', 'alias'), params, async (type, call) => {
        const { analytics, transport } = createTestClient();
        let error: unknown = 'not called';
        (analytics[type] as (p: unknown, cb: (e: unknown) => void) => void).call(analytics, call, (e) => (error = e));
        await analytics.flush();
        if (error !== undefined) return; // refused by the client: nothing to check downstream
        const body = JSON.parse(transport.batches[0]!.request.body as string) as unknown;
        const result = parseIngestBody('batch', body, Date.now());
        if (!result.ok) expect.fail(result.message);
        expect(result.rejected).to.deep.equal([]);
        expect(result.messages).to.have.length(1);
        // And the receiver parses what the forwarder would send.
        expect(() => parseWebhookMessage(result.messages[0]!.body)).not.to.throw();
      }),
      { numRuns: 1000 },
    );
  });
});
