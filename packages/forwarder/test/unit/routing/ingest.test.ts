import { describe, it } from 'mocha';
import { expect } from 'chai';
import { parseIngestBody } from '../../../src/routing/ingest';
import { MAX_MESSAGE_BYTES } from '../../../../eventrelay/src/messages/limits';
import type { IngestFailure, IngestResult, RejectedMessage, ValidMessage } from '../../../src/routing/ingest';
import { routeMessage } from '../../../src/routing/router';

const NOW = Date.parse('2026-05-01T10:00:00.000Z');

function parsed(endpoint: Parameters<typeof parseIngestBody>[0], body: unknown, bodyBytes?: number): IngestResult {
  const result = parseIngestBody(endpoint, body, NOW, bodyBytes);
  if (!result.ok) expect.fail(`refused: ${result.message}`);
  return result;
}

function ok(endpoint: Parameters<typeof parseIngestBody>[0], body: unknown): readonly ValidMessage[] {
  const result = parsed(endpoint, body);
  expect(result.rejected).to.deep.equal([]);
  return result.messages;
}

/** The rejected entries of a batch answer (the body itself was accepted). */
function rejectedOf(body: unknown, bodyBytes?: number): readonly RejectedMessage[] {
  return parsed('batch', body, bodyBytes).rejected;
}

function refused(endpoint: Parameters<typeof parseIngestBody>[0], body: unknown): IngestFailure {
  const result = parseIngestBody(endpoint, body, NOW);
  if (result.ok) expect.fail('accepted');
  return result;
}

describe('parseIngestBody', () => {
  it('accepts a batch of every call type and builds their webhook form', () => {
    const messages = ok('batch', {
      batch: [
        { type: 'identify', userId: 'u1', traits: { a: 1 }, messageId: 'm1' },
        { type: 'track', anonymousId: 'anon', event: 'E', messageId: 'm2' },
        { type: 'page', userId: 'u1', properties: { path: '/' }, messageId: 'm3' },
        { type: 'screen', userId: 'u1', name: 'Home', messageId: 'm4' },
        { type: 'group', userId: 'u1', groupId: 'g', messageId: 'm5' },
        { type: 'alias', userId: 'u1', previousId: 'anon', messageId: 'm6' },
      ],
      sentAt: new Date(NOW).toISOString(),
    });
    expect(messages.map((m) => [m.type, m.messageId, m.webhook.type])).to.deep.equal([
      ['identify', 'm1', 'identify'],
      ['track', 'm2', 'track'],
      ['page', 'm3', 'page'],
      ['screen', 'm4', 'screen'],
      ['group', 'm5', 'group'],
      ['alias', 'm6', 'alias'],
    ]);
    expect(messages[1]!.webhook).to.include({ userId: 'anon', event: 'E' });
  });

  it('stamps a message without timestamp with the time of receipt and keeps a historical one', () => {
    const [fresh, old] = ok('batch', {
      batch: [
        { type: 'track', userId: 'u', event: 'E' },
        { type: 'track', userId: 'u', event: 'E', timestamp: '2020-02-02T02:02:02.002Z' },
      ],
    });
    expect(fresh!.webhook.timestamp).to.equal('2026-05-01T10:00:00.000Z');
    expect(old!.webhook.timestamp).to.equal('2020-02-02T02:02:02.002Z');
  });

  it('gives a message without messageId a fresh one', () => {
    const [a, b] = ok('batch', { batch: [{ type: 'track', userId: 'u', event: 'E' }, { type: 'track', userId: 'u', event: 'E' }] });
    expect(a!.messageId).to.match(/^[0-9a-f-]{36}$/);
    expect(a!.messageId).not.to.equal(b!.messageId);
    expect((a!.webhook as { messageId?: string }).messageId).to.equal(a!.messageId);
  });

  it('takes the type from the path on /v1/{type} and drops writeKey and sentAt', () => {
    const [m] = ok('track', { userId: 'u', event: 'E', writeKey: 'secret-key', sentAt: 'x' });
    expect(m!.type).to.equal('track');
    expect(JSON.stringify(m!.webhook)).not.to.contain('secret-key');
    expect(refused('track', { type: 'identify', userId: 'u' }).message).to.match(/does not match the endpoint \/v1\/track/);
  });

  it('adds the connection\'s IP to a copy of each context, keeps one the call carries, and keeps a `__proto__` key a key', () => {
    const body = JSON.parse(`{"batch":[
      {"type":"track","userId":"u","event":"E","context":{"locale":"en"}},
      {"type":"track","userId":"u","event":"E"},
      {"type":"track","userId":"u","event":"E","context":{"ip":"203.0.113.9"}},
      {"type":"track","userId":"u","event":"E","context":{"__proto__":{"polluted":true},"locale":"fr"}}]}`) as { batch: { context?: object }[] };
    const result = parseIngestBody('batch', body, NOW, undefined, '198.51.100.1');
    if (!result.ok) throw new Error(result.message);
    const contexts = result.messages.map((m) => JSON.parse(m.body).context);
    expect(contexts).to.deep.equal([{ locale: 'en', ip: '198.51.100.1' }, { ip: '198.51.100.1' }, { ip: '203.0.113.9' }, JSON.parse('{"__proto__":{"polluted":true},"locale":"fr","ip":"198.51.100.1"}')]);
    expect(Object.hasOwn(contexts[3], '__proto__')).to.equal(true);
    expect((result.messages[3]!.webhook as { context: { polluted?: unknown } }).context.polluted).to.equal(undefined);
    // The call's own object is never changed.
    expect(body.batch[0]!.context).to.deep.equal({ locale: 'en' });
  });

  it('applies batch-level context and integrations under each message', () => {
    const [a, b] = ok('batch', {
      context: { ip: '1.2.3.4', app: { name: 'x' } },
      integrations: { All: false },
      batch: [
        { type: 'track', userId: 'u', event: 'E', context: { app: { name: 'mine' } } },
        { type: 'track', userId: 'u', event: 'E', integrations: { Webhooks: true } },
      ],
    });
    expect(a!.webhook).to.have.deep.property('context', { ip: '1.2.3.4', app: { name: 'mine' } });
    expect(a!.integrations).to.deep.equal({ All: false });
    expect(b!.integrations).to.deep.equal({ All: false, Webhooks: true });
  });

  describe('spec 2.4 rules (the same checkMessage the client applies)', () => {
    const cases: Array<[string, unknown, string]> = [
      ['no userId nor anonymousId', { type: 'track', event: 'E' }, 'userId'],
      ['track without event', { type: 'track', userId: 'u' }, 'event'],
      ['group without groupId', { type: 'group', userId: 'u' }, 'groupId'],
      ['alias without previousId', { type: 'alias', userId: 'u' }, 'previousId'],
      ['alias without userId', { type: 'alias', previousId: 'p' }, 'userId'],
      ['identify with an empty userId', { type: 'identify', userId: '' }, 'userId'],
      ['an unknown type', { type: 'purchase', userId: 'u' }, 'type'],
      ['traits that are not an object', { type: 'identify', userId: 'u', traits: [1] }, 'traits'],
      ['integrations that are not an object', { type: 'track', userId: 'u', event: 'E', integrations: 'all' }, 'integrations'],
      ['a timestamp that is not a date', { type: 'track', userId: 'u', event: 'E', timestamp: 'yesterday' }, 'timestamp'],
      ['a timestamp past year 9999 in UTC', { type: 'track', userId: 'u', event: 'E', timestamp: '9999-12-31T23:30:00-01:00' }, 'timestamp'],
      ['a messageId that is not a string', { type: 'track', userId: 'u', event: 'E', messageId: 7 }, 'messageId'],
      ['a messageId over 200 characters', { type: 'track', userId: 'u', event: 'E', messageId: 'm'.repeat(201) }, 'messageId'],
      ['a screen name that is not a string', { type: 'screen', userId: 'u', name: 5 }, 'name'],
    ];
    for (const [what, message, field] of cases) {
      it(`refuses ${what}, naming \`${field}\`, and keeps the valid message beside it`, () => {
        const result = parsed('batch', { batch: [{ type: 'track', userId: 'ok', event: 'E', messageId: 'good' }, message] });
        expect(result.messages.map((m) => m.messageId)).to.deep.equal(['good']);
        expect(result.rejected).to.have.length(1);
        expect(result.rejected[0]).to.include({ index: 1, code: 'invalid_message', field });
        expect(result.rejected[0]!.message).to.be.a('string').and.not.equal('');
      });
    }

    it('accepts numeric ids from other SDKs and sends them as strings', () => {
      const [group] = ok('batch', { batch: [{ type: 'group', userId: 42, groupId: 7 }] });
      expect(group!.webhook).to.include({ userId: '42', groupId: '7' });
    });
  });

  it('lists every invalid message by index and stores the others', () => {
    const result = parsed('batch', {
      batch: [{ type: 'track', userId: 'u' }, { type: 'track', userId: 'u', event: 'ok' }, 'text', { type: 'group', userId: 'u' }],
    });
    expect(result.rejected.map((e) => e.index)).to.deep.equal([0, 2, 3]);
    expect(result.messages.map((m) => (m.webhook as { event?: string }).event)).to.deep.equal(['ok']);
  });

  it('answers an invalid message on /v1/{type} with a rejected entry at index 0, not a 4xx', () => {
    const result = parsed('track', { userId: 'u' });
    expect(result.messages).to.deep.equal([]);
    expect(result.rejected).to.have.length(1);
    expect(result.rejected[0]).to.include({ index: 0, code: 'invalid_message', field: 'event' });
  });

  it('refuses a body that is not an object with a batch array, whole', () => {
    expect(refused('batch', [1, 2])).to.include({ status: 400, code: 'invalid_body' });
    expect(refused('batch', { messages: [] })).to.include({ status: 400, code: 'invalid_body' });
    expect(refused('track', 'x')).to.include({ status: 400, code: 'invalid_body' });
  });

  it('rejects a message over 32 KB by index, with its size and the limit, and stores the others', () => {
    const big = { type: 'track', userId: 'u', event: 'E', properties: { blob: 'é'.repeat(MAX_MESSAGE_BYTES / 2) } };
    const result = parsed('batch', { batch: [{ type: 'track', userId: 'u', event: 'E' }, big] });
    expect(result.messages).to.have.length(1);
    expect(result.rejected).to.have.length(1);
    expect(result.rejected[0]).to.include({ index: 1, code: 'message_too_large', limit: MAX_MESSAGE_BYTES });
    expect(result.rejected[0]!.size).to.be.greaterThan(MAX_MESSAGE_BYTES);
  });

  it('still measures each message when told the size of a body that could hold a large one', () => {
    const body = { batch: [{ type: 'track', userId: 'u', event: 'E', properties: { s: 'é'.repeat(17_000) } }] };
    expect(rejectedOf(body, Buffer.byteLength(JSON.stringify(body)))[0]).to.include({ code: 'message_too_large' });
  });

  it('measures the 32 KB in UTF-8 bytes, not characters', () => {
    // 17 000 characters of two bytes each: 34 000 bytes, over 32 768 though under in characters.
    expect(rejectedOf({ batch: [{ type: 'track', userId: 'u', event: 'E', properties: { s: 'é'.repeat(17_000) } }] })[0]).to.include({
      code: 'message_too_large',
    });
    expect(ok('batch', { batch: [{ type: 'track', userId: 'u', event: 'E', properties: { s: 'e'.repeat(30_000) } }] })).to.have.length(1);
  });

  it('rejects a message nested too deeply for JSON (a RangeError), never throwing for the request', () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 200_000; i++) deep = { a: deep };
    const result = parsed('batch', { batch: [{ type: 'track', userId: 'u', event: 'Deep', properties: deep }, { type: 'track', userId: 'u', event: 'Flat' }] });
    expect(result.messages.map((m) => (m.webhook as { event?: string }).event)).to.deep.equal(['Flat']);
    expect(result.rejected[0]).to.include({ index: 0, code: 'invalid_message' });
    expect(result.rejected[0]!.message).to.match(/nested too deeply/);
  });

  describe('event time', () => {
    const sentAt = '2026-05-01T10:00:05.000Z'; // the sender's clock runs 5 s ahead of the forwarder's (NOW)

    it('derives timestamp from originalTimestamp corrected by sentAt vs receipt (clock skew)', () => {
      const [m] = ok('batch', { sentAt, batch: [{ type: 'track', userId: 'u', event: 'E', originalTimestamp: '2026-05-01T10:00:02.000Z' }] });
      // receivedAt - (sentAt - originalTimestamp) = 10:00:00 - 3 s
      expect(m!.webhook.timestamp).to.equal('2026-05-01T09:59:57.000Z');
    });

    it('uses originalTimestamp as it is without a valid sentAt, and timestamp over both', () => {
      const [bare, given] = ok('batch', {
        batch: [
          { type: 'track', userId: 'u', event: 'E', originalTimestamp: '2026-05-01T10:00:02.000Z' },
          { type: 'track', userId: 'u', event: 'E', timestamp: '2020-01-01T00:00:00.000Z', originalTimestamp: '2026-05-01T10:00:02.000Z' },
        ],
      });
      expect(bare!.webhook.timestamp).to.equal('2026-05-01T10:00:02.000Z');
      expect(given!.webhook.timestamp).to.equal('2020-01-01T00:00:00.000Z');
    });

    it('takes sentAt from the body of a single-message endpoint too', () => {
      const [m] = ok('track', { userId: 'u', event: 'E', originalTimestamp: '2026-05-01T10:00:02.000Z', sentAt });
      expect(m!.webhook.timestamp).to.equal('2026-05-01T09:59:57.000Z');
    });
  });
});

describe('routeMessage', () => {
  const [plain, off, forced] = ok('batch', {
    batch: [
      { type: 'track', userId: 'u', event: 'E', messageId: 'a' },
      { type: 'track', userId: 'u', event: 'E', messageId: 'b', integrations: { All: false } },
      { type: 'track', userId: 'u', event: 'E', messageId: 'c', integrations: { All: false, Webhooks: true } },
    ],
  });
  const on = { name: 'web', webhooksOn: true };

  it('routes to the Webhooks destination with the body serialized once', () => {
    const accepted = routeMessage(on, plain!, NOW);
    expect(accepted).to.include({ source: 'web', messageId: 'a', receivedAt: NOW });
    expect(accepted.deliveries).to.have.length(1);
    expect(accepted.deliveries[0]).to.include({ destination: 'Webhooks', kind: 'message', messageId: 'a', createdAt: NOW });
    expect(accepted.deliveries[0]!.body).to.equal(plain!.body);
    expect(JSON.parse(accepted.deliveries[0]!.body)).to.deep.equal(plain!.webhook);
  });

  it('follows integrations: All:false turns it off, Webhooks:true back on', () => {
    expect(routeMessage(on, off!, NOW).deliveries).to.have.length(0);
    expect(routeMessage(on, forced!, NOW).deliveries).to.have.length(1);
  });

  it('routes nothing for a source whose destination is off, yet records the message', () => {
    const accepted = routeMessage({ name: 'web', webhooksOn: false }, plain!, NOW);
    expect(accepted.deliveries).to.deep.equal([]);
    expect(accepted.messageId).to.equal('a');
  });
});
