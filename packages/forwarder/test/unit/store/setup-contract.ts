import { describe, it, beforeEach, afterEach } from 'mocha';
import { expect } from 'chai';
import { SourceDeletedError } from '../../../src/store/contract';
import type { ForwarderStore } from '../../../src/store/contract';
import { keyRecord } from '../../../src/registry/keys';
import { accepted, T0 } from './contract';
import type { SetupStore, SourceRecord, StoredWebhooks } from '../../../src/store/contract';

const WEBHOOKS: StoredWebhooks = {
  webhooks: [{ url: 'https://hooks.example.test/in?token=abc', headers: { Authorization: 'Bearer xyz', 'X-Team': 'web' } }],
  sharedSecret: ['current-secret', 'previous-secret'],
  signing: 'both',
};

function source(name: string, overrides: Partial<SourceRecord> = {}): SourceRecord {
  return { name, id: `id-${name}`, enabled: false, webhooks: undefined, applied: undefined, createdAt: T0, updatedAt: T0, ...overrides };
}

/**
 * The runtime setup every store keeps (`store.setup`): one transaction per write, all or nothing,
 * a revision bumped by each write. `create` returns a new, empty store (the suite closes it).
 */
export function setupContract(name: string, create: () => Promise<ForwarderStore>): void {
  describe(`${name} (runtime setup)`, function () {
    this.timeout(20_000);
    let store: ForwarderStore;
    let setup: SetupStore;
    beforeEach(async () => {
      store = await create();
      setup = store.setup!;
    });
    afterEach(async () => {
      await store.close();
    });

    it('keeps sources with their settings and key digests, and bumps the revision per write', async () => {
      const start = await setup.revision();
      const key = keyRecord('web', 'wk_the-key-itself', 'api', T0);
      const result = await setup.write([{ op: 'create', source: source('web', { enabled: true, webhooks: WEBHOOKS, applied: 'digest-1' }) }, { op: 'add-key', key }]);
      expect(result).to.deep.equal({ ok: true, revision: start + 1, failedDeliveries: 0 });
      const snapshot = await setup.read();
      expect(snapshot.revision).to.equal(start + 1);
      expect(snapshot.sources).to.deep.equal([source('web', { enabled: true, webhooks: WEBHOOKS, applied: 'digest-1' })]);
      expect(snapshot.keys).to.deep.equal([key]);
      // The key itself is nowhere: only its digest and last four characters.
      expect(JSON.stringify(snapshot)).not.to.contain('the-key-itself');
      expect(key.last4).to.equal('self');
    });

    it('writes all steps or none: a taken name leaves the store and its revision as they were', async () => {
      await setup.write([{ op: 'create', source: source('web') }]);
      const before = await setup.read();
      const result = await setup.write([
        { op: 'create', source: source('ios') },
        { op: 'create', source: source('web', { enabled: true }) },
      ]);
      expect(result).to.deep.equal({ ok: false, reason: 'exists', name: 'web' });
      expect(await setup.read()).to.deep.equal(before);
      expect(await setup.revision()).to.equal(before.revision);
    });

    it('updates only the named fields and refuses an unknown source', async () => {
      await setup.write([{ op: 'create', source: source('web', { webhooks: WEBHOOKS, applied: 'd' }) }]);
      await setup.write([{ op: 'update', name: 'web', at: T0 + 5, enabled: true }]);
      expect((await setup.read()).sources[0]).to.deep.equal(source('web', { enabled: true, webhooks: WEBHOOKS, applied: 'd', updatedAt: T0 + 5 }));
      await setup.write([{ op: 'update', name: 'web', at: T0 + 6, webhooks: null, applied: null }]);
      expect((await setup.read()).sources[0]).to.deep.equal(source('web', { enabled: true, updatedAt: T0 + 6 }));
      expect(await setup.write([{ op: 'update', name: 'nope', at: T0 }])).to.deep.equal({ ok: false, reason: 'missing', name: 'nope' });
    });

    it('keeps a source\'s schema controls: made with it, replaced, removed, left as they are by other changes', async () => {
      const plan = { blockedEvents: ['Spam', 'Заказ'], allowedEvents: ['Order', 'Spam'], blockedTypes: ['page'] };
      await setup.write([{ op: 'create', source: source('web', { schema: plan }) }, { op: 'create', source: source('ios') }]);
      expect((await setup.read()).sources.find((s) => s.name === 'web')).to.deep.equal(source('web', { schema: plan }));
      await setup.write([{ op: 'update', name: 'web', at: T0 + 1, enabled: true }]);
      expect((await setup.read()).sources.find((s) => s.name === 'web')!.schema).to.deep.equal(plan);
      const other = { blockedEvents: [], allowedEvents: null, blockedTypes: ['alias'] };
      await setup.write([{ op: 'update', name: 'ios', at: T0 + 2, schema: other }]);
      await setup.write([{ op: 'update', name: 'web', at: T0 + 3, schema: null }]);
      const sources = (await setup.read()).sources;
      expect(sources.find((s) => s.name === 'web')).to.deep.equal(source('web', { enabled: true, updatedAt: T0 + 3 }));
      expect(sources.find((s) => s.name === 'ios')).to.deep.equal(source('ios', { schema: other, updatedAt: T0 + 2 }));
    });

    it('gives a key to one source only, and makes a known key valid again', async () => {
      await setup.write([{ op: 'create', source: source('web') }, { op: 'create', source: source('ios') }]);
      const key = keyRecord('web', 'shared-key', 'config', T0);
      await setup.write([{ op: 'add-key', key }, { op: 'expire-keys', source: 'web', at: T0 + 10, except: [] }]);
      expect((await setup.read()).keys[0]!.expiresAt).to.equal(T0 + 10);
      await setup.write([{ op: 'add-key', key: keyRecord('web', 'shared-key', 'config', T0 + 1) }]);
      const keys = (await setup.read()).keys;
      expect(keys).to.have.length(1);
      expect(keys[0]).to.include({ id: key.id, expiresAt: undefined });
      expect(await setup.write([{ op: 'add-key', key: keyRecord('ios', 'shared-key', 'api', T0) }])).to.deep.equal({ ok: false, reason: 'key-taken', name: 'web' });
    });

    it('ends keys but the listed ones, of one origin when asked, keeping an earlier end', async () => {
      await setup.write([{ op: 'create', source: source('web') }]);
      const a = keyRecord('web', 'key-a', 'config', T0);
      const b = keyRecord('web', 'key-b', 'api', T0);
      const c = keyRecord('web', 'key-c', 'config', T0);
      await setup.write([{ op: 'add-key', key: a }, { op: 'add-key', key: b }, { op: 'add-key', key: c }]);
      await setup.write([{ op: 'expire-keys', source: 'web', at: T0 + 100, except: [c.id], origin: 'config' }]);
      const ends = () => setup.read().then((s) => Object.fromEntries(s.keys.map((k) => [k.id, k.expiresAt])));
      expect(await ends()).to.deep.equal({ [a.id]: T0 + 100, [b.id]: undefined, [c.id]: undefined });
      await setup.write([{ op: 'expire-keys', source: 'web', at: T0 + 500, except: [] }]);
      expect(await ends()).to.deep.equal({ [a.id]: T0 + 100, [b.id]: T0 + 500, [c.id]: T0 + 500 });
    });

    it('deletes a source with its keys and audiences, failing its pending deliveries only', async () => {
      await setup.write([{ op: 'create', source: source('web') }, { op: 'create', source: source('ios') }, { op: 'add-key', key: keyRecord('web', 'k', 'api', T0) }]);
      await store.accept([accepted('a'), accepted('b'), accepted('c', true, 'ios')]);
      await store.syncAudience('web', 'vip', ['u1'], () => []);
      const result = await setup.write([{ op: 'delete', name: 'web', at: T0 + 1, reason: 'The source was deleted' }]);
      expect(result).to.include({ ok: true, failedDeliveries: 2 });
      const snapshot = await setup.read();
      expect(snapshot.sources.map((s) => s.name)).to.deep.equal(['ios']);
      expect(snapshot.keys).to.deep.equal([]);
      expect(await store.claim('web', T0 + 10, 10, { owner: 'x', ms: 1000 })).to.deep.equal([]);
      expect((await store.claim('ios', T0 + 10, 10, { owner: 'x', ms: 1000 })).map((d) => d.messageId)).to.deep.equal(['c']);
      expect(await store.counts()).to.deep.include({ failed: 2, pending: 1 });
      // Its audiences went with it: a source of the same name starts afresh.
      expect((await store.syncAudience('web', 'vip', ['u1'], () => [])).firstSync).to.equal(true);
      expect(await setup.write([{ op: 'delete', name: 'web', at: T0, reason: 'x' }])).to.deep.equal({ ok: false, reason: 'missing', name: 'web' });
    });
    it('stores a call only while its source exists with the id its key led to, and never for a source made again', async () => {
      await setup.write([{ op: 'create', source: source('web') }]);
      expect((await store.accept([accepted('a')], undefined, 'id-web')).stored).to.equal(1);
      // Another id (a source made again under the name since the key was checked): nothing stored.
      const refused = await store.accept([accepted('b')], undefined, 'id-older').then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).to.be.instanceOf(SourceDeletedError).with.property('code', 'ERR_SOURCE_DELETED');
      expect((refused as Error).message).to.contain('"web"');
      await setup.write([{ op: 'delete', name: 'web', at: T0 + 1, reason: 'The source was deleted' }]);
      await setup.write([{ op: 'create', source: source('web', { id: 'id-web-2' }) }]);
      const late = await store.accept([accepted('c')], undefined, 'id-web').then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(late).to.be.instanceOf(SourceDeletedError);
      // Nothing of the old source reaches the new one: 'a' was given up, 'b' and 'c' never stored.
      expect(await store.claim('web', T0 + 10, 10, { owner: 'x', ms: 1000 })).to.deep.equal([]);
      expect(await store.counts()).to.deep.include({ accepted: 1, failed: 1, pending: 0 });
      // The new source's own calls are stored, even with the messageId 'b' the old one was refused.
      expect((await store.accept([accepted('b')], undefined, 'id-web-2')).stored).to.equal(1);
      expect((await store.claim('web', T0 + 10, 10, { owner: 'x', ms: 1000 })).map((d) => d.messageId)).to.deep.equal(['b']);
    });

    it('records delivered an attempt in flight when its source was deleted, and nothing else of it', async () => {
      await setup.write([{ op: 'create', source: source('web') }]);
      await store.accept([accepted('a'), accepted('b'), accepted('c')], undefined, 'id-web');
      const [a, b, c] = await store.claim('web', T0 + 10, 10, { owner: 'x', ms: 60_000 });
      expect((await setup.write([{ op: 'delete', name: 'web', at: T0 + 20, reason: 'The source was deleted' }])) as object).to.include({ failedDeliveries: 3 });
      expect(await store.counts()).to.deep.include({ failed: 3, delivered: 0, pending: 0 });
      const result = await store.record([
        { id: a!.id, lease: a!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0 + 10, at: T0 + 30 },
        { id: b!.id, lease: b!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0 + 10, nextAttemptAt: T0 + 99, error: 'HTTP 503' },
        { id: c!.id, lease: c!.lease + 1, status: 'delivered', attempts: 1, firstAttemptAt: T0 + 10, at: T0 + 30 },
      ]);
      // The retry cannot bring b back, and a delivered outcome of another lease than the one out at the deletion does not count.
      expect(result.stale.slice().sort((x, y) => x - y)).to.deep.equal([b!.id, c!.id].sort((x, y) => x - y));
      expect(result.recorded).to.equal(1);
      expect(await store.counts()).to.deep.include({ failed: 2, delivered: 1, pending: 0 });
      // Written once: the same outcome again changes nothing.
      expect((await store.record([{ id: a!.id, lease: a!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0 + 10, at: T0 + 31 }])).stale).to.deep.equal([a!.id]);
      expect(await store.counts()).to.deep.include({ failed: 2, delivered: 1 });
    });

    it('records delivered a call handed over at acceptance and in flight at the deletion', async () => {
      await setup.write([{ op: 'create', source: source('web') }]);
      const result = await store.accept([accepted('h')], { owner: 'x', ms: 60_000, now: T0 }, 'id-web');
      const handed = result.leased?.[0];
      if (handed === undefined) return; // a store that leases nothing at acceptance: covered by the claim case
      await setup.write([{ op: 'delete', name: 'web', at: T0 + 20, reason: 'The source was deleted' }]);
      const recorded = await store.record([{ id: handed.id, lease: handed.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0 + 1, at: T0 + 30 }]);
      expect(recorded).to.deep.equal({ recorded: 1, stale: [], released: [] });
      expect(await store.counts()).to.deep.include({ failed: 0, delivered: 1, pending: 0 });
    });
  });
}
