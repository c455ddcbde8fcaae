import { describe, it } from 'mocha';
import { expect } from 'chai';
import { planDeletion } from '../../../src/routing/deletion';
import { checkAudienceRequest, checkMembers, planAudienceNotices } from '../../../src/routing/audiences';
import { ValidationError } from '../../../../eventrelay/src/errors';
import { audienceChange } from '../../../src/store/audience-change';

const NOW = Date.parse('2026-05-01T10:00:00.000Z');
const sources = [
  { name: 'web', webhooksOn: true },
  { name: 'ios', webhooksOn: true },
  { name: 'warehouse', webhooksOn: false },
];

describe('planDeletion', () => {
  it('notifies every source whose destination is on, with a bare delete message', () => {
    const plan = planDeletion({ userId: 'u1' }, sources, NOW);
    expect(plan.notified).to.deep.equal(['web', 'ios']);
    expect(plan.skipped).to.deep.equal(['warehouse']);
    expect(plan.deliveries.map((d) => [d.source, d.kind, d.destination])).to.deep.equal([
      ['web', 'delete', 'Webhooks'],
      ['ios', 'delete', 'Webhooks'],
    ]);
    expect(JSON.parse(plan.deliveries[0]!.body)).to.deep.equal({ type: 'delete', userId: 'u1', timestamp: '2026-05-01T10:00:00.000Z' });
  });

  it('limits the notices to the sources named', () => {
    const plan = planDeletion({ userId: 'u1', sources: ['ios', 'warehouse'] }, sources, NOW);
    expect(plan.notified).to.deep.equal(['ios']);
    expect(plan.skipped).to.deep.equal(['warehouse']);
  });

  it('refuses a missing userId and an unknown source', () => {
    expect(() => planDeletion({ userId: '' }, sources, NOW)).to.throw(ValidationError).with.property('field', 'userId');
    expect(() => planDeletion({ userId: 'u', sources: ['nope'] }, sources, NOW))
      .to.throw(ValidationError, /Unknown source "nope"/)
      .with.property('field', 'sources');
  });
});

describe('audience sync planning', () => {
  it('derives the trait from the audience name; repeated members count once (the store dedupes them)', async () => {
    const checked = checkAudienceRequest({ source: 'web', audience: 'High Value Users', members: ['a', 'b', 'a'] }, sources);
    expect(checked.trait).to.equal('high_value_users');
    expect((await audienceChange(undefined, checked.members)).added).to.deep.equal(['a', 'b']);
  });

  it('names the bad field of a request', () => {
    const field = (request: unknown) => {
      try {
        checkAudienceRequest(request as never, sources);
      } catch (error) {
        expect(error).to.be.instanceOf(ValidationError);
        return (error as ValidationError).field;
      }
      return expect.fail('accepted');
    };
    expect(field({ source: 'nope', audience: 'x', members: [] })).to.equal('source');
    expect(field({ source: 'web', audience: '!!', members: [] })).to.equal('audience');
    expect(field({ source: 'web', audience: 'x', members: 'a' })).to.equal('members');
  });

  it('names the first member that is not a userId, in a list of any length', async () => {
    const members: unknown[] = Array.from({ length: 120_000 }, (_, i) => `u${i}`);
    members[110_000] = 3;
    members[115_000] = '';
    let error: unknown;
    await checkMembers(members).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(ValidationError).with.property('field', 'members[110000]');
    await checkMembers(['a', 'b']);
  });

  it('plans an identify with the trait true per added member and false per removed one', () => {
    const notices = planAudienceNotices(sources[0]!, 'vip', { firstSync: false, added: ['a'], removed: ['b'] }, NOW);
    const bodies = notices.map((n) => JSON.parse(n.body));
    expect(bodies.map((b) => [b.type, b.userId, b.traits])).to.deep.equal([
      ['identify', 'a', { vip: true }],
      ['identify', 'b', { vip: false }],
    ]);
    expect(bodies[0].timestamp).to.equal('2026-05-01T10:00:00.000Z');
    expect(bodies[0].messageId).to.equal(notices[0]!.messageId);
    expect(notices.every((n) => n.kind === 'audience' && n.source === 'web')).to.equal(true);
  });

  it('plans nothing for a source whose destination is off', () => {
    expect(planAudienceNotices(sources[2]!, 'vip', { firstSync: true, added: ['a'], removed: [] }, NOW)).to.deep.equal([]);
  });
});
