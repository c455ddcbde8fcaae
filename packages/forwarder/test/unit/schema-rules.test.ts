import { describe, it } from 'mocha';
import { expect } from 'chai';
import fc from 'fast-check';
import { compileRules, MAX_EVENT_NAME, MAX_SCHEMA_NAMES, messageKind, parseFilter, parseSchema, scanKind, UrlFilter } from '../../src/schema-rules';
import { serializeWebhookMessage, toWebhookMessage } from '../../../eventrelay/src/messages/webhook';
import { parseConfig } from '../../src/config';
import { configErrorOf } from './config-refusal';

/** The ConfigError `fn` throws, to look at its field and message. */
const refusal = configErrorOf;

describe('parseSchema (a source\'s schema controls)', () => {
  it('takes the three lists, drops repeats, and reads an empty schema as none', () => {
    expect(parseSchema({ blockedEvents: ['A', 'B', 'A'], allowedEvents: ['C'], blockedTypes: ['page', 'page', 'alias'] }, '')).to.deep.equal({
      blockedEvents: ['A', 'B'],
      allowedEvents: ['C'],
      blockedTypes: ['page', 'alias'],
    });
    expect(parseSchema({ blockedEvents: ['A'] }, '')).to.deep.equal({ blockedEvents: ['A'], allowedEvents: null, blockedTypes: [] });
    // An empty tracking plan is a plan: it blocks every track event.
    expect(parseSchema({ allowedEvents: [] }, '')).to.deep.equal({ blockedEvents: [], allowedEvents: [], blockedTypes: [] });
    expect(parseSchema({}, '')).to.equal(undefined);
    expect(parseSchema({ blockedEvents: [], allowedEvents: null, blockedTypes: [] }, '')).to.equal(undefined);
  });

  it(`refuses ${MAX_SCHEMA_NAMES + 1} names and 100,000 names, naming the list`, () => {
    for (const length of [MAX_SCHEMA_NAMES + 1, 100_000]) {
      const names = Array.from({ length }, (_, i) => `e${i}`);
      expect(refusal(() => parseSchema({ allowedEvents: names }, '')).field).to.equal('allowedEvents');
      expect(refusal(() => parseSchema({ blockedEvents: names }, 'sources[2].schema')).field).to.equal('sources[2].schema.blockedEvents');
    }
    expect(parseSchema({ blockedEvents: Array.from({ length: MAX_SCHEMA_NAMES }, (_, i) => `e${i}`) }, '')!.blockedEvents).to.have.length(MAX_SCHEMA_NAMES);
  });

  it(`refuses an event name of 10,000 characters (the limit is ${MAX_EVENT_NAME}), naming its place, without repeating it`, () => {
    const error = refusal(() => parseSchema({ blockedEvents: ['ok', 'x'.repeat(10_000)] }, ''));
    expect(error.field).to.equal('blockedEvents[1]');
    expect(error.message).to.contain(`at most ${MAX_EVENT_NAME} characters`).and.not.to.contain('xxxxxxxxxx');
    // Characters, not UTF-16 units: 500 emoji fit.
    expect(parseSchema({ blockedEvents: ['🙂'.repeat(MAX_EVENT_NAME)] }, '')!.blockedEvents[0]).to.have.length(MAX_EVENT_NAME * 2);
    expect(refusal(() => parseSchema({ blockedEvents: ['🙂'.repeat(MAX_EVENT_NAME + 1)] }, '')).field).to.equal('blockedEvents[0]');
  });

  it('refuses what is not a list of names or types, an unknown type and an unknown field', () => {
    expect(refusal(() => parseSchema({ blockedEvents: 'A' }, '')).field).to.equal('blockedEvents');
    expect(refusal(() => parseSchema({ blockedEvents: [''] }, '')).field).to.equal('blockedEvents[0]');
    expect(refusal(() => parseSchema({ allowedEvents: ['ok', 7] }, '')).field).to.equal('allowedEvents[1]');
    expect(refusal(() => parseSchema({ blockedEvents: ['\ud800'] }, '')).field).to.equal('blockedEvents[0]');
    expect(refusal(() => parseSchema({ blockedTypes: ['delete'] }, '')).field).to.equal('blockedTypes[0]');
    expect(refusal(() => parseSchema({ blockedTypes: ['Track'] }, '')).field).to.equal('blockedTypes[0]');
    expect(refusal(() => parseSchema({ blockedEvent: ['A'] }, '')).field).to.equal('blockedEvent');
    expect(refusal(() => parseSchema([], '')).field).to.equal(undefined);
    expect(refusal(() => parseSchema(null, 'sources[0].schema')).field).to.equal('sources[0].schema');
  });
});

describe('parseFilter (a webhook URL\'s filter)', () => {
  it('takes types (with delete) and track events, and reads {} as no filter', () => {
    expect(parseFilter({ types: ['track', 'delete', 'track'] }, 'f')).to.deep.equal({ types: ['track', 'delete'] });
    expect(parseFilter({ events: ['Order Completed'] }, 'f')).to.deep.equal({ events: ['Order Completed'] });
    expect(parseFilter({ types: ['track'], events: ['A'] }, 'f')).to.deep.equal({ types: ['track'], events: ['A'] });
    expect(parseFilter({}, 'f')).to.equal(undefined);
  });

  it('refuses a type that does not exist, empty lists, events a type list cannot take, and unknown fields', () => {
    const field = 'webhooks[1].filter';
    expect(refusal(() => parseFilter({ types: ['track', 'purchase'] }, field)).field).to.equal('webhooks[1].filter.types[1]');
    expect(refusal(() => parseFilter({ types: [] }, field)).field).to.equal('webhooks[1].filter.types');
    expect(refusal(() => parseFilter({ events: [] }, field)).field).to.equal('webhooks[1].filter.events');
    expect(refusal(() => parseFilter({ types: ['identify'], events: ['A'] }, field)).field).to.equal('webhooks[1].filter.events');
    expect(refusal(() => parseFilter({ type: ['track'] }, field)).field).to.equal('webhooks[1].filter.type');
    expect(refusal(() => parseFilter({ events: ['y'.repeat(10_000)] }, field)).field).to.equal('webhooks[1].filter.events[0]');
    expect(refusal(() => parseFilter('track', field)).field).to.equal(field);
  });
});

describe('UrlFilter', () => {
  it('takes a call whose type it lists; its events narrow track calls only', () => {
    const f = new UrlFilter({ types: ['track', 'identify'], events: ['Order'] });
    expect(f.matches('track', 'Order')).to.equal(true);
    expect(f.matches('track', 'order')).to.equal(false);
    expect(f.matches('identify', undefined)).to.equal(true);
    expect(f.matches('page', undefined)).to.equal(false);
    expect(f.matches('delete', undefined)).to.equal(false);
    const events = new UrlFilter({ events: ['Order'] });
    expect(events.matches('track', 'Order')).to.equal(true);
    expect(events.matches('track', 'Other')).to.equal(false);
    // Without `types`, every other type and deletion notices go through.
    expect(events.matches('page', undefined)).to.equal(true);
    expect(events.matches('delete', undefined)).to.equal(true);
  });
});

describe('SourceRules (what routing asks per call)', () => {
  it('blocks by type first, then by event name, then by the tracking plan, naming the rule', () => {
    const rules = compileRules({ blockedEvents: ['Spam'], allowedEvents: ['Order', 'Spam'], blockedTypes: ['page'] }, undefined)!;
    expect(rules.blocked('page', undefined)).to.include({ rule: 'blocked_type' });
    expect(rules.blocked('track', 'Spam')).to.include({ rule: 'blocked_event' });
    expect(rules.blocked('track', 'Spam')!.reason).to.contain('"Spam"').and.contain('blockedEvents');
    expect(rules.blocked('track', 'Unplanned')).to.include({ rule: 'tracking_plan' });
    expect(rules.blocked('track', 'Order')).to.equal(undefined);
    expect(rules.blocked('identify', undefined)).to.equal(undefined);
    // A name of 32 KB is shown cut short in the reason.
    expect(rules.blocked('track', 'z'.repeat(32_000))!.reason.length).to.be.below(200);
  });

  it('routes a call when some URL takes it: a URL without a filter takes every call', () => {
    const filtered = compileRules(undefined, { webhooks: [{ filter: { types: ['identify'] } }, { filter: { events: ['Order'] } }] })!;
    expect(filtered.routed('identify', undefined)).to.equal(true);
    expect(filtered.routed('track', 'Order')).to.equal(true);
    expect(filtered.routed('track', 'Other')).to.equal(false);
    expect(filtered.routed('delete', undefined)).to.equal(true);
    const noDelete = compileRules(undefined, { webhooks: [{ filter: { types: ['track'] } }] })!;
    expect(noDelete.routed('delete', undefined)).to.equal(false);
    expect(compileRules(undefined, { webhooks: [{ filter: { types: ['track'] } }, {}] })).to.equal(undefined);
    expect(compileRules(undefined, undefined)).to.equal(undefined);
  });
});

describe('the config file: `schema` and `filter`', () => {
  const base = (schema: unknown, filter?: unknown) => ({
    sources: [{ name: 'web', writeKey: 'k', schema, destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.com/a', ...(filter === undefined ? {} : { filter }) }] } } }],
  });

  it('reads both, and names the field of a bad one in the file\'s terms', () => {
    const config = parseConfig(base({ blockedEvents: ['Spam'] }, { types: ['track'] }), {});
    expect(config.sources[0]!.schema).to.deep.equal({ blockedEvents: ['Spam'], allowedEvents: null, blockedTypes: [] });
    expect(config.sources[0]!.webhooks!.webhooks[0]!.filter).to.deep.equal({ types: ['track'] });
    expect(refusal(() => parseConfig(base({ blockedTypes: ['nope'] }), {})).field).to.equal('sources[0].schema.blockedTypes[0]');
    expect(refusal(() => parseConfig(base(undefined, { types: ['orders'] }), {})).field).to.equal('sources[0].destinations.Webhooks.webhooks[0].filter.types[0]');
    expect(parseConfig(base(undefined), {}).sources[0]).not.to.have.property('schema');
  });
});

describe('messageKind (what a URL filter reads in a webhook body)', () => {
  /** What JSON.parse says of a text: the reference. */
  function parsed(text: string): { type: string; event: string | undefined } | undefined {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const { type, event } = value as { type?: unknown; event?: unknown };
    return typeof type === 'string' ? { type, event: typeof event === 'string' ? event : undefined } : undefined;
  }

  it('reads the type and event of the webhook messages the forwarder makes, escapes and nesting included', () => {
    const bodies = [
      toWebhookMessage({ type: 'track', userId: 'u', event: 'Order "Completed" \\ é 🙂', properties: { event: 'not this one', nested: { type: 'page' } }, context: { event: 'nor this' } }),
      toWebhookMessage({ type: 'identify', userId: 'u', traits: { type: 'x', list: [{ event: 'y' }, '}', '{"'] } }),
      toWebhookMessage({ type: 'delete', userId: 'u' }),
    ].map((m) => serializeWebhookMessage(m));
    expect(bodies.map(messageKind)).to.deep.equal([
      { type: 'track', event: 'Order "Completed" \\ é 🙂' },
      { type: 'identify', event: undefined },
      { type: 'delete', event: undefined },
    ]);
  });

  it('agrees with JSON.parse on any JSON object text, compact or not, and on duplicate keys', () => {
    const objects = fc.dictionary(fc.oneof(fc.constantFrom('type', 'event', 'version', 'context', 'ty\\pe'), fc.string()), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 8 });
    fc.assert(
      fc.property(objects, fc.boolean(), (object, spaced) => {
        const text = JSON.stringify(object, null, spaced ? 1 : undefined);
        expect(messageKind(text)).to.deep.equal(parsed(text));
        // Compact text with plain keys is read by the scan, not handed to JSON.parse.
        if (!spaced && Object.keys(object).every((k) => !JSON.stringify(k).includes('\\'))) expect(scanKind(text)).to.deep.equal(parsed(text));
      }),
      { numRuns: 2000 },
    );
    for (const text of ['{"type":"track","event":"A","type":"page"}', '{"event":"A","type":"track","event":"B"}', '{"typ\\u0065":"track"}', '{}', '{"type":1}', '[{"type":"track"}]', '"x"', '{"type":"track"} ']) {
      expect(messageKind(text), text).to.deep.equal(parsed(text));
    }
    expect(messageKind('not json')).to.equal(undefined);
  });
});
