import { readFileSync } from 'node:fs';
import { describe, it } from 'mocha';
import { expect } from 'chai';
import { WebhookMessageError } from '../../packages/eventrelay/src/errors';
import { WebhookDestination } from '../../packages/forwarder/src/delivery/destination';
import { toWebhookMessage } from '../../packages/eventrelay/src/messages/webhook';
import type { DeletionNotice, InboundMessage } from '../../packages/eventrelay/src/messages/webhook';

/** The hand-written expected message, re-serialized so only key order and values count. */
function golden(name: string): string {
  const text = readFileSync(new URL(`../../packages/eventrelay/test/fixtures/webhook-golden/${name}.json`, import.meta.url), 'utf8');
  return JSON.stringify(JSON.parse(text));
}

function outbound(message: InboundMessage | DeletionNotice): string {
  return WebhookDestination.serialize(toWebhookMessage(message));
}

describe('toWebhookMessage (golden messages of spec 2.2/2.3)', () => {
  it('page: properties carry path, referrer, title, url and the page name and category', () => {
    const input: InboundMessage = {
      type: 'page',
      userId: '019mr8mf4r',
      anonymousId: 'anon-7f3c',
      name: 'Pricing',
      category: 'Docs',
      properties: { path: '/pricing', referrer: 'https://www.example.com/', title: 'Pricing - Example', url: 'https://example.com/pricing' },
      context: { ip: '203.0.113.7' },
      integrations: { All: true },
      timestamp: '2026-03-14T09:26:53.589Z',
      messageId: 'msg-page-1',
    };
    expect(outbound(input)).to.equal(golden('page'));
  });

  it('screen: name and context (device, os, app); a Date timestamp gets milliseconds and Z', () => {
    const input: InboundMessage = {
      type: 'screen',
      userId: '019mr8mf4r',
      name: 'Main Screen',
      context: {
        device: { model: 'iPhone15,2', type: 'ios' },
        os: { name: 'iOS', version: '17.4' },
        app: { build: '3056', name: 'Example', version: '4.2.1' },
      },
      timestamp: new Date(Date.UTC(2026, 2, 14, 9, 26, 53)),
      messageId: 'msg-screen-1',
    };
    expect(outbound(input)).to.equal(golden('screen'));
  });

  it('identify: traits; a timestamp with an offset is converted to UTC; no context when none was sent', () => {
    const input: InboundMessage = {
      type: 'identify',
      userId: '019mr8mf4r',
      traits: { email: 'ada@example.com', name: 'Ada Lovelace', logins: 14 },
      timestamp: '2026-03-14T09:26:53.589+02:00',
      messageId: 'msg-identify-1',
    };
    expect(outbound(input)).to.equal(golden('identify'));
  });

  it('track: event and properties', () => {
    const input: InboundMessage = {
      type: 'track',
      userId: '019mr8mf4r',
      event: 'Order Completed',
      properties: { revenue: 42.5, currency: 'EUR' },
      context: { library: { name: 'eventrelay', version: '0.1.0' } },
      timestamp: '2026-03-14T09:26:53.589Z',
      messageId: 'msg-track-1',
    };
    expect(outbound(input)).to.equal(golden('track'));
  });

  it('alias: "Previous ID" and "User ID", and no userId field', () => {
    const input: InboundMessage = {
      type: 'alias',
      userId: '019mr8mf4r',
      previousId: 'anon-7f3c',
      anonymousId: 'anon-7f3c',
      timestamp: '2026-03-14T09:26:53.589Z',
      messageId: 'msg-alias-1',
    };
    expect(outbound(input)).to.equal(golden('alias'));
  });

  it('group: groupId and traits whose keys may contain spaces', () => {
    const input: InboundMessage = {
      type: 'group',
      userId: '019mr8mf4r',
      groupId: 'acme-inc',
      traits: { name: 'Acme Inc', industry: 'Manufacturing', 'Number of Employees': 250 },
      timestamp: '2026-03-14T09:26:53.589Z',
      messageId: 'msg-group-1',
    };
    expect(outbound(input)).to.equal(golden('group'));
  });

  it('delete: exactly type, userId and timestamp; no version, no messageId, nothing else', () => {
    const input = {
      type: 'delete',
      userId: '019mr8mf4r',
      timestamp: new Date('2026-03-14T09:26:53.589Z'),
      messageId: 'must-not-appear',
      context: { ip: '203.0.113.7' },
    } as DeletionNotice;
    expect(outbound(input)).to.equal(golden('delete'));
  });

  it('an anonymous call sends its anonymousId as userId, with empty properties by default', () => {
    const input: InboundMessage = { type: 'track', anonymousId: 'anon-7f3c', event: 'Signed Up', timestamp: '2026-03-14T09:26:53.589Z' };
    expect(outbound(input)).to.equal(golden('anonymous-track'));
  });
});

describe('toWebhookMessage (other rules)', () => {
  it('uses the time of receipt when the message has no timestamp', () => {
    const message = toWebhookMessage({ type: 'identify', userId: 'u1' }, { receivedAt: Date.UTC(2026, 0, 2, 3, 4, 5, 6) });
    expect(message.timestamp).to.equal('2026-01-02T03:04:05.006Z');
  });

  it('keeps screen properties when the call has some (extension), not when empty', () => {
    const withProps = toWebhookMessage({ type: 'screen', userId: 'u1', name: 'Home', properties: { tab: 'feed' }, timestamp: '2026-01-01T00:00:00Z' });
    expect(withProps).to.have.deep.property('properties', { tab: 'feed' });
    const without = toWebhookMessage({ type: 'screen', userId: 'u1', name: 'Home', properties: {}, timestamp: '2026-01-01T00:00:00Z' });
    expect(without).not.to.have.property('properties');
    expect(without).to.have.deep.property('context', {});
  });

  it('page properties win over the top-level name when both are set', () => {
    const message = toWebhookMessage({ type: 'page', userId: 'u1', name: 'Top', properties: { name: 'Inner' }, timestamp: '2026-01-01T00:00:00Z' });
    expect(message).to.have.nested.property('properties.name', 'Inner');
  });

  const invalid: [string, unknown, string][] = [
    ['a track without userId and anonymousId', { type: 'track', event: 'E' }, 'userId'],
    ['a track without event', { type: 'track', userId: 'u1' }, 'event'],
    ['a group without groupId', { type: 'group', userId: 'u1' }, 'groupId'],
    ['an alias without previousId', { type: 'alias', userId: 'u1' }, 'previousId'],
    ['an alias without userId (anonymousId does not count)', { type: 'alias', previousId: 'p', anonymousId: 'a' }, 'userId'],
    ['a delete without userId', { type: 'delete' }, 'userId'],
    ['a timestamp that is not a date', { type: 'identify', userId: 'u1', timestamp: 'yesterday' }, 'timestamp'],
    ['properties that are a list', { type: 'track', userId: 'u1', event: 'E', properties: [1] }, 'properties'],
    ['an unknown type', { type: 'purchase', userId: 'u1' }, 'type'],
  ];
  for (const [what, input, field] of invalid) {
    it(`refuses ${what} with WebhookMessageError naming \`${field}\``, () => {
      let caught: unknown;
      try {
        toWebhookMessage(input as InboundMessage);
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(WebhookMessageError);
      expect((caught as WebhookMessageError).field).to.equal(field);
    });
  }
});
