import { describe, it } from 'mocha';
import { expect } from 'chai';
import { routeMessage } from '../../../src/routing/router';
import type { RouteSource } from '../../../src/routing/router';
import { parseIngestBody } from '../../../src/routing/ingest';
import type { ValidMessage } from '../../../src/routing/ingest';
import { planDeletion } from '../../../src/routing/deletion';
import { planAudienceNotices } from '../../../src/routing/audiences';
import { compileRules } from '../../../src/schema-rules';
import type { SourceSchema, WebhookFilter } from '../../../src/store/contract';

const NOW = Date.parse('2026-05-01T10:00:00.000Z');

function calls(...batch: Record<string, unknown>[]): ValidMessage[] {
  const parsed = parseIngestBody('batch', { batch: batch.map((m, i) => ({ userId: 'u1', messageId: `m${i}`, ...m })) }, NOW);
  if (!parsed.ok) throw new Error(parsed.message);
  return [...parsed.messages];
}

function source(schema?: SourceSchema, filters: (WebhookFilter | undefined)[] = [undefined], webhooksOn = true): RouteSource {
  return { name: 'web', id: 'id-web', webhooksOn, rules: compileRules(schema, { webhooks: filters.map((filter) => (filter === undefined ? {} : { filter })) }) };
}

/** Each call's outcome: 'routed', or the rule that stopped it. */
function route(src: RouteSource, messages: ValidMessage[]): string[] {
  return messages.map((m) => {
    const accepted = routeMessage(src, m, NOW);
    expect(accepted.deliveries.length === 0).to.equal(accepted.filtered !== undefined);
    return accepted.filtered?.rule ?? 'routed';
  });
}

describe('routeMessage with a source\'s schema and its URLs\' filters', () => {
  const batch = calls(
    { type: 'track', event: 'Order Completed' },
    { type: 'track', event: 'Spam' },
    { type: 'track', event: 'Unplanned' },
    { type: 'page' },
    { type: 'identify' },
    { type: 'identify', integrations: { Webhooks: false } },
  );

  it('routes everything without controls or filters', () => {
    expect(route(source(), batch)).to.deep.equal(['routed', 'routed', 'routed', 'routed', 'routed', 'integrations']);
  });

  it('stops what the schema blocks, naming the rule; the controls come before the destination\'s state', () => {
    const schema = { blockedEvents: ['Spam'], allowedEvents: ['Order Completed', 'Spam'], blockedTypes: ['page'] };
    expect(route(source(schema), batch)).to.deep.equal(['routed', 'blocked_event', 'tracking_plan', 'blocked_type', 'routed', 'integrations']);
    expect(route(source(schema, [undefined], false), batch)).to.deep.equal(['no_destination', 'blocked_event', 'tracking_plan', 'blocked_type', 'no_destination', 'no_destination']);
  });

  it('routes a call a URL\'s filter takes, and stops one no URL takes', () => {
    const filters = [{ types: ['track'], events: ['Order Completed'] }, { types: ['identify'] }];
    expect(route(source(undefined, filters), batch)).to.deep.equal(['routed', 'url_filter', 'url_filter', 'url_filter', 'routed', 'integrations']);
    // A URL without a filter takes everything.
    expect(route(source(undefined, [{ types: ['identify'] }, undefined]), batch)).to.deep.equal(['routed', 'routed', 'routed', 'routed', 'routed', 'integrations']);
  });
});

describe('deletion notices and audience identifies with URL filters', () => {
  it('notifies a source only when some URL\'s filter does not leave `delete` out', () => {
    const sources: RouteSource[] = [
      { ...source(undefined, [{ types: ['track'] }]), name: 'tracks-only' },
      { ...source(undefined, [{ types: ['track'] }, { types: ['identify', 'delete'] }]), name: 'one-takes-delete' },
      { ...source(undefined, [{ events: ['Order'] }]), name: 'events-only' },
      // Schema controls are about what a source sends: they never stop a deletion notice.
      { ...source({ blockedEvents: [], allowedEvents: null, blockedTypes: ['identify', 'track'] }), name: 'blocks-types' },
    ];
    const plan = planDeletion({ userId: 'u1' }, sources, NOW);
    expect(plan.notified).to.deep.equal(['one-takes-delete', 'events-only', 'blocks-types']);
    expect(plan.skipped).to.deep.equal(['tracks-only']);
  });

  it('sends no identify for an audience when no URL\'s filter takes identify calls', () => {
    const change = { firstSync: true, added: ['u1', 'u2'], removed: [] };
    expect(planAudienceNotices(source(undefined, [{ types: ['track'] }]), 'vip', change, NOW)).to.deep.equal([]);
    expect(planAudienceNotices(source(undefined, [{ types: ['track'] }, { types: ['identify'] }]), 'vip', change, NOW)).to.have.length(2);
  });
});
