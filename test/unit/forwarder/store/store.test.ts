import { describe, it, beforeEach, afterEach } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../../../src/forwarder/store/memory';
import { SqliteStore } from '../../../../src/forwarder/store/sqlite';
import type { ForwarderStore, NewDelivery } from '../../../../src/forwarder/store/store';
import { EventRelayError } from '../../../../src/errors';
import Database from 'better-sqlite3';

const T0 = 1_700_000_000_000;

function delivery(messageId: string, createdAt = T0, source = 'web'): NewDelivery {
  return { source, destination: 'Webhooks', kind: 'message', messageId, body: JSON.stringify({ messageId }), createdAt };
}

function accepted(messageId: string, routed = true, source = 'web') {
  return { source, messageId, receivedAt: T0, deliveries: routed ? [delivery(messageId, T0, source)] : [] };
}

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'eventrelay-store-'));
  dirs.push(dir);
  return dir;
}

const kinds: Array<[string, () => ForwarderStore]> = [
  ['MemoryStore', () => new MemoryStore()],
  ['SqliteStore', () => new SqliteStore({ dataDir: tempDir() })],
];

for (const [name, create] of kinds) {
  describe(`${name} (ForwarderStore contract)`, () => {
    let store: ForwarderStore;
    beforeEach(() => {
      store = create();
    });
    afterEach(async () => {
      await store.close();
    });

    it('returns accepted deliveries as due, in order, and counts them', async () => {
      const result = await store.accept([accepted('a'), accepted('b'), accepted('c', false)]);
      expect(result).to.deep.equal({ stored: 3, duplicates: 0 });
      const due = await store.due('web', T0, 10, new Set());
      expect(due.map((d) => d.messageId)).to.deep.equal(['a', 'b']);
      expect(due[0]).to.include({ attempts: 0, firstAttemptAt: undefined, nextAttemptAt: T0, body: '{"messageId":"a"}', source: 'web', kind: 'message' });
      const counts = await store.counts();
      expect(counts).to.deep.include({ accepted: 3, duplicates: 0, pending: 2, retrying: 0, oldestPendingAt: T0 });
    });

    it('acknowledges a repeated messageId of the same source without routing it again', async () => {
      await store.accept([accepted('a')]);
      expect(await store.accept([accepted('a'), accepted('b')])).to.deep.equal({ stored: 1, duplicates: 1 });
      await store.accept([accepted('a', true, 'ios')]);
      expect((await store.due('web', T0, 10, new Set())).map((d) => d.messageId)).to.deep.equal(['a', 'b']);
      expect((await store.due('ios', T0, 10, new Set())).map((d) => d.messageId)).to.deep.equal(['a']);
      expect((await store.counts()).duplicates).to.equal(1);
    });

    it('answers each of several concurrent requests with its own result (group commit)', async () => {
      const [first, second, third] = await Promise.all([
        store.accept([accepted('g1')]),
        store.accept([accepted('g1'), accepted('g2')]),
        store.accept([]),
      ]);
      expect(first).to.deep.equal({ stored: 1, duplicates: 0 });
      expect(second).to.deep.equal({ stored: 1, duplicates: 1 });
      expect(third).to.deep.equal({ stored: 0, duplicates: 0 });
      expect((await store.due('web', T0, 10, new Set())).map((d) => d.messageId)).to.deep.equal(['g1', 'g2']);
      expect(await store.counts()).to.deep.include({ accepted: 3, duplicates: 1 });
    });

    it('respects the limit, the due time and the excluded ids', async () => {
      await store.enqueue([delivery('a', T0), delivery('b', T0 + 10), delivery('c', T0 + 20), delivery('later', T0 + 1000)]);
      const first = await store.due('web', T0 + 20, 2, new Set());
      expect(first.map((d) => d.messageId)).to.deep.equal(['a', 'b']);
      const rest = await store.due('web', T0 + 20, 2, new Set(first.map((d) => d.id)));
      expect(rest.map((d) => d.messageId)).to.deep.equal(['c']);
      expect(await store.nextDueAfter('web', T0 + 20)).to.equal(T0 + 1000);
      expect(await store.nextDueAfter('web', T0 + 1000)).to.equal(undefined);
    });

    it('keeps a queue per source', async () => {
      await store.enqueue([delivery('w1', T0, 'web'), delivery('i1', T0, 'ios'), delivery('i2', T0 + 50, 'ios')]);
      expect(await store.nextDueAfter('ios', T0)).to.equal(T0 + 50);
      expect(await store.nextDueAfter('web', T0)).to.equal(undefined);
      expect((await store.due('ios', T0 + 100, 10, new Set())).map((d) => d.messageId)).to.deep.equal(['i1', 'i2']);
      expect((await store.due('web', T0 + 100, 10, new Set())).map((d) => d.messageId)).to.deep.equal(['w1']);
      expect(await store.due('nobody', T0 + 100, 10, new Set())).to.deep.equal([]);
    });

    it('hands out again a delivery no longer excluded that got no outcome', async () => {
      await store.enqueue([delivery('a'), delivery('b')]);
      const [a] = await store.due('web', T0, 1, new Set());
      expect((await store.due('web', T0, 5, new Set([a!.id]))).map((d) => d.messageId)).to.deep.equal(['b']);
      expect((await store.due('web', T0, 5, new Set())).map((d) => d.messageId)).to.deep.equal(['a', 'b']);
    });

    it('reschedules a retry and finishes delivered and failed deliveries', async () => {
      await store.enqueue([delivery('a'), delivery('b'), delivery('c')]);
      const [a, b, c] = await store.due('web', T0, 10, new Set());
      await store.record([
        { id: a!.id, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 500, error: 'HTTP 503' },
        { id: b!.id, status: 'delivered', attempts: 1, firstAttemptAt: T0, at: T0 + 5 },
        { id: c!.id, status: 'failed', attempts: 1, firstAttemptAt: T0, at: T0 + 5, reason: 'HTTP 404' },
      ]);
      expect(await store.due('web', T0 + 499, 10, new Set())).to.deep.equal([]);
      const again = await store.due('web', T0 + 500, 10, new Set());
      expect(again).to.have.length(1);
      expect(again[0]).to.include({ messageId: 'a', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 500 });
      expect(await store.counts()).to.deep.include({ delivered: 1, failed: 1, pending: 1, retrying: 1, oldestPendingAt: T0 });
      // An outcome for a finished delivery changes nothing (a late duplicate write).
      await store.record([{ id: b!.id, status: 'failed', attempts: 2, firstAttemptAt: T0, at: T0 + 9, reason: 'late' }]);
      expect(await store.counts()).to.deep.include({ delivered: 1, failed: 1 });
    });

    it('keeps audience membership and plans notices from the change', async () => {
      const plan = (change: { added: readonly string[]; removed: readonly string[] }) => [
        ...change.added.map((id) => delivery(`+${id}`)),
        ...change.removed.map((id) => delivery(`-${id}`)),
      ];
      const first = await store.syncAudience('web', 'vip', ['u1', 'u2', 'u2'], plan);
      expect(first).to.deep.equal({ firstSync: true, added: ['u1', 'u2'], removed: [] });
      const second = await store.syncAudience('web', 'vip', ['u2', 'u3'], plan);
      expect(second).to.deep.equal({ firstSync: false, added: ['u3'], removed: ['u1'] });
      const same = await store.syncAudience('web', 'vip', ['u3', 'u2'], plan);
      expect(same).to.deep.equal({ firstSync: false, added: [], removed: [] });
      // Another source has its own audience of the same name.
      expect((await store.syncAudience('ios', 'vip', ['u9'], plan)).firstSync).to.equal(true);
      const ids = (await store.due('web', T0, 100, new Set())).map((d) => d.messageId);
      expect(ids).to.deep.equal(['+u1', '+u2', '+u3', '-u1', '+u9']);
    });

    it('an empty first sync still counts as the first one', async () => {
      expect((await store.syncAudience('web', 'vip', [], () => [])).firstSync).to.equal(true);
      expect(await store.syncAudience('web', 'vip', ['u1'], () => [])).to.deep.equal({ firstSync: false, added: ['u1'], removed: [] });
    });

    it('prunes finished deliveries and old messageIds, never pending ones', async () => {
      await store.accept([accepted('a'), accepted('b')]);
      const [a] = await store.due('web', T0, 1, new Set());
      await store.record([{ id: a!.id, status: 'delivered', attempts: 1, firstAttemptAt: T0, at: T0 + 1 }]);
      expect(await store.prune(T0 + 2)).to.be.at.least(2); // the two remembered ids, and the finished delivery where kept
      expect((await store.due('web', T0, 10, new Set())).map((d) => d.messageId)).to.deep.equal(['b']);
      // Once forgotten, a messageId is accepted as new.
      expect(await store.accept([accepted('a')])).to.deep.equal({ stored: 1, duplicates: 0 });
    });
  });
}

describe('SqliteStore durability', () => {
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('finds pending deliveries, counters and audiences again after a reopen', async () => {
    const dataDir = tempDir();
    const first = new SqliteStore({ dataDir });
    await first.accept([accepted('a'), accepted('b')]);
    const [a] = await first.due('web', T0, 1, new Set());
    await first.record([{ id: a!.id, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 100 }]);
    await first.syncAudience('web', 'vip', ['u1'], () => []);
    await first.close();

    const second = new SqliteStore({ dataDir });
    try {
      const due = await second.due('web', T0 + 100, 10, new Set());
      expect(due.map((d) => [d.messageId, d.attempts])).to.deep.equal([['b', 0], ['a', 1]]);
      expect(await second.counts()).to.deep.include({ accepted: 2, pending: 2, retrying: 1 });
      expect(await second.syncAudience('web', 'vip', ['u1', 'u2'], () => [])).to.deep.equal({ firstSync: false, added: ['u2'], removed: [] });
      expect(await second.accept([accepted('a')])).to.deep.equal({ stored: 0, duplicates: 1 });
    } finally {
      await second.close();
    }
  });

  it('drops the body of a delivered message at once and keeps a failed one', async () => {
    const dataDir = tempDir();
    const store = new SqliteStore({ dataDir });
    await store.enqueue([delivery('ok'), delivery('bad')]);
    const [ok, bad] = await store.due('web', T0, 10, new Set());
    await store.record([
      { id: ok!.id, status: 'delivered', attempts: 1, firstAttemptAt: T0, at: T0 + 1 },
      { id: bad!.id, status: 'failed', attempts: 1, firstAttemptAt: T0, at: T0 + 1, reason: 'HTTP 410' },
    ]);
    await store.close();
    const db = new Database(join(dataDir, 'eventrelay.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT message_id, body, last_error FROM deliveries ORDER BY id').all();
      expect(rows).to.deep.equal([
        { message_id: 'ok', body: '', last_error: null },
        { message_id: 'bad', body: '{"messageId":"bad"}', last_error: 'HTTP 410' },
      ]);
    } finally {
      db.close();
    }
  });

  it('refuses a second store on the same directory', async () => {
    const dataDir = tempDir();
    const first = new SqliteStore({ dataDir });
    try {
      await first.accept([accepted('a')]);
      expect(() => new SqliteStore({ dataDir })).to.throw(EventRelayError, /Another forwarder is using the data directory/);
    } finally {
      await first.close();
    }
  });

  it('refuses calls after close', async () => {
    const store = new SqliteStore({ dataDir: tempDir() });
    await store.close();
    await store.close();
    let error: unknown;
    try {
      await store.accept([accepted('a')]);
    } catch (e) {
      error = e;
    }
    expect(error).to.be.instanceOf(EventRelayError).with.property('code', 'ERR_STORE_CLOSED');
  });
});
