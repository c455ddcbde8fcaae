import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { InvalidArgumentError, WebhookMessageError } from '../../../src/errors';
import { parseWebhookMessage } from '../../../src/webhooks/parse';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { body } from '../../fixtures/webhooks/load';

const TS = '2026-03-01T12:34:56.789Z';

/** A valid message of each type; tests break one field at a time. */
const valid: Record<WebhookMessage['type'], Record<string, unknown>> = {
  page: { version: 1, type: 'page', userId: 'u1', timestamp: TS, properties: { path: '/', url: 'https://e.x/' } },
  screen: { version: 1, type: 'screen', userId: 'u1', timestamp: TS, name: 'Home', context: { device: { model: 'x', type: 'ios' } } },
  identify: { version: 1, type: 'identify', userId: 'u1', timestamp: TS, traits: { email: 'a@b.c', logins: 3 } },
  track: { version: 1, type: 'track', userId: 'u1', timestamp: TS, event: 'Clicked', properties: {} },
  alias: { version: 1, type: 'alias', timestamp: TS, 'Previous ID': 'anon-1', 'User ID': 'u1' },
  group: { version: 1, type: 'group', userId: 'u1', timestamp: TS, groupId: 'g1', traits: { 'Number of Employees': 5 } },
  delete: { type: 'delete', userId: 'u1', timestamp: TS },
};

function parse(value: unknown): WebhookMessage {
  return parseWebhookMessage(JSON.stringify(value));
}

function parseError(value: unknown): WebhookMessageError {
  try {
    parseWebhookMessage(typeof value === 'string' ? value : JSON.stringify(value));
  } catch (error) {
    expect(error).to.be.instanceOf(WebhookMessageError);
    return error as WebhookMessageError;
  }
  throw new Error('expected a WebhookMessageError');
}

describe('parseWebhookMessage', () => {
  describe('accepts each of the seven types', () => {
    for (const [type, message] of Object.entries(valid)) {
      it(type, () => {
        expect(parse(message)).to.deep.equal(message);
      });
    }
  });

  it('narrows on `type` (alias ids under spaced keys, delete without version)', () => {
    const alias = parseWebhookMessage(body('alias.json'));
    if (alias.type !== 'alias') throw new Error('expected alias');
    expect(alias['Previous ID']).to.equal('anon-1');
    expect(alias['User ID']).to.equal('user-1');
    const deleted = parseWebhookMessage(body('delete.json'));
    expect(deleted).to.deep.equal({ type: 'delete', userId: 'user-9', timestamp: '2026-03-01T00:00:00.000Z' });
  });

  it('parses the fixture bodies the same from a string, Buffer, Uint8Array and ArrayBuffer', () => {
    for (const name of ['track-whitespace.json', 'identify-escapes.json', 'page-emoji-u2028.json']) {
      const bytes = body(name);
      const fromString = parseWebhookMessage(bytes.toString('utf8'));
      expect(parseWebhookMessage(bytes)).to.deep.equal(fromString);
      expect(parseWebhookMessage(new Uint8Array(bytes))).to.deep.equal(fromString);
      expect(parseWebhookMessage(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer)).to.deep.equal(fromString);
    }
    const identify = parseWebhookMessage(body('identify-escapes.json'));
    if (identify.type !== 'identify') throw new Error('expected identify');
    expect(identify.userId).to.equal('café-7');
    expect(identify.traits).to.include({ site: 'https://example.com/a', score: 100 });
    const page = parseWebhookMessage(body('page-emoji-u2028.json'));
    if (page.type !== 'page') throw new Error('expected page');
    expect(page.userId).to.equal('u-\u{1F600}');
    expect(page.properties.title).to.equal('line\u2028sep\u2029para \u{1F389}');
  });

  it('parses every golden message of the forwarder (what this project sends)', () => {
    const dir = new URL('../../fixtures/webhook-golden/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.length).to.be.greaterThan(0);
    for (const file of files) {
      const raw = readFileSync(new URL(file, dir));
      expect(() => parseWebhookMessage(raw), file).to.not.throw();
    }
  });

  it('keeps `messageId` and unknown extra fields (forward compatible)', () => {
    const message = parse({ ...valid.track, messageId: 'm-1', futureField: { a: 1 }, context: { ip: '203.0.113.7' } });
    expect(message).to.include({ messageId: 'm-1' });
    expect((message as unknown as Record<string, unknown>).futureField).to.deep.equal({ a: 1 });
    expect(parse({ ...valid.delete, extra: true })).to.include({ extra: true });
  });

  it('does not check values inside properties, traits and context', () => {
    expect(() => parse({ ...valid.page, properties: { url: 42, referrer: null } })).to.not.throw();
    expect(() => parse({ ...valid.identify, traits: { vip_users: true, nested: { x: [1] } } })).to.not.throw();
  });

  describe('refuses a body that is not a message, naming the field', () => {
    const cases: [string, WebhookMessage['type'], Record<string, unknown>, string][] = [
      ['a missing type', 'track', { type: undefined }, 'type'],
      ['an unknown type', 'track', { type: 'purchase' }, 'type'],
      ['a capitalized type', 'track', { type: 'Track' }, 'type'],
      ['a missing version', 'track', { version: undefined }, 'version'],
      ['version 2', 'page', { version: 2 }, 'version'],
      ['version "1" (a string)', 'identify', { version: '1' }, 'version'],
      ['a missing userId', 'track', { userId: undefined }, 'userId'],
      ['a numeric userId', 'identify', { userId: 42 }, 'userId'],
      ['a null userId on delete', 'delete', { userId: null }, 'userId'],
      ['a missing event', 'track', { event: undefined }, 'event'],
      ['properties as an array', 'track', { properties: [] }, 'properties'],
      ['missing page properties', 'page', { properties: undefined }, 'properties'],
      ['a missing screen name', 'screen', { name: undefined }, 'name'],
      ['a screen without context', 'screen', { context: undefined }, 'context'],
      ['context as a string', 'track', { context: 'ios' }, 'context'],
      ['context null', 'identify', { context: null }, 'context'],
      ['missing traits', 'identify', { traits: undefined }, 'traits'],
      ['a missing groupId', 'group', { groupId: undefined }, 'groupId'],
      ['traits null on group', 'group', { traits: null }, 'traits'],
      ['a missing "Previous ID"', 'alias', { 'Previous ID': undefined }, 'Previous ID'],
      ['previousId instead of "User ID"', 'alias', { 'User ID': undefined, userId: 'u1' }, 'User ID'],
      ['a numeric messageId', 'track', { messageId: 7 }, 'messageId'],
      ['a missing timestamp on delete', 'delete', { timestamp: undefined }, 'timestamp'],
    ];
    for (const [label, type, change, field] of cases) {
      it(`${label} (${type})`, () => {
        const error = parseError({ ...valid[type], ...change });
        expect(error.field).to.equal(field);
        expect(error.message).to.include(`\`${field}\``);
      });
    }
  });

  describe('timestamp: any RFC 3339 date-time with a time zone', () => {
    const accepted = [
      '2026-03-01T12:34:56.789Z',
      '2026-03-01T12:34:56Z',
      '2026-03-01T12:34:56.789123Z',
      '2026-03-01T14:34:56.789+02:00',
      '2024-02-29T00:00:00.000Z',
    ];
    const refused = [
      '2026-03-01T12:34:56.789',
      '2026-03-01',
      '2026-03-01 12:34:56.789Z',
      '2026-02-30T00:00:00.000Z',
      '2025-02-29T00:00:00.000Z',
      '2026-13-01T00:00:00.000Z',
      '2026-03-01T24:00:00.000Z',
      '2026-03-01T12:60:00.000Z',
      '2026-03-01T12:34:56.Z',
      '2026-03-01T12:34:56.789+0200',
      'yesterday',
      '',
    ];
    for (const timestamp of accepted) {
      it(`accepts ${timestamp}`, () => {
        expect(parse({ ...valid.track, timestamp })).to.include({ timestamp });
      });
    }
    for (const timestamp of refused) {
      it(`refuses ${JSON.stringify(timestamp)}`, () => {
        expect(parseError({ ...valid.track, timestamp }).field).to.equal('timestamp');
      });
    }
    it('refuses a number (epoch milliseconds)', () => {
      expect(parseError({ ...valid.delete, timestamp: 1767225600000 }).field).to.equal('timestamp');
    });
  });

  it('refuses JSON that is not an object', () => {
    for (const text of ['[]', 'null', '"track"', '42']) {
      const error = parseError(text);
      expect(error.message).to.include('a JSON object');
      expect(error.field).to.equal(undefined);
    }
  });

  it('refuses text that is not JSON without quoting it', () => {
    const error = parseError('{"type":"track", secret-looking-body-text');
    expect(error.message).to.include('not valid JSON').and.not.include('secret-looking');
    expect(error.cause).to.equal(undefined);
  });

  it('refuses bytes that are not UTF-8', () => {
    const bytes = Buffer.concat([Buffer.from('{"type":"track","userId":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    expect(() => parseWebhookMessage(bytes)).to.throw(WebhookMessageError, 'not valid UTF-8');
  });

  it('never puts field values in its messages', () => {
    const error = parseError({ ...valid.track, event: { leaked: 'zq-private-value' } });
    expect(error.message).to.not.include('zq-private-value');
    expect(error.message).to.include('got an object');
  });

  it('throws InvalidArgumentError for an already parsed object', () => {
    expect(() => parseWebhookMessage(valid.track as never)).to.throw(InvalidArgumentError, 'not parsed JSON');
  });
});
