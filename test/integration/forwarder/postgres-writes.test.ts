import { describe, it } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { PostgresStore } from '../../../src/forwarder/store/postgres';
import { POSTGRES_MIGRATIONS } from '../../../src/forwarder/store/postgres-schema';
import { accepted, T0 } from '../../unit/forwarder/store/contract';
import { usePostgres } from '../../helpers/postgres';

const LEASE = { owner: 'a', ms: 30_000 };

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

interface TableStats {
  upd: number;
  hot: number;
  del: number;
}

describe('PostgresStore: what each delivery costs the database (real server)', function () {
  this.timeout(30_000);

  describe('claims and outcomes', () => {
    const db = usePostgres();

    it('claims update rows in place (HOT: no index entries), and a delivered delivery leaves no row behind', async () => {
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const ids = Array.from({ length: 30 }, (_, i) => `hot-${i}`);
      try {
        await store.accept(ids.map((id) => accepted(id)));
        const claimed = await store.claim('web', T0, 100, LEASE);
        expect(claimed).to.have.length(30);
        const { recorded } = await store.record(
          claimed.map((d) => ({ id: d.id, lease: d.lease, status: 'delivered' as const, attempts: 1, firstAttemptAt: T0, at: T0 + 1 })),
        );
        expect(recorded).to.equal(30);
        expect(await store.counts()).to.deep.include({ delivered: 30, pending: 0 });
      } finally {
        // Closing ends the store's sessions, which hands their statistics to the server.
        await store.close();
      }
      expect(await query(db.url, 'SELECT id FROM deliveries')).to.deep.equal([]);
      // The statistics of the ended sessions arrive shortly after they end.
      let stats: TableStats | undefined;
      for (let i = 0; i < 100; i++) {
        [stats] = await query<TableStats>(
          db.url,
          "SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot, n_tup_del::int AS del FROM pg_stat_user_tables WHERE relname = 'deliveries'",
        );
        if (stats !== undefined && stats.upd >= 30 && stats.del >= 30) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(stats).to.deep.equal({ upd: 30, hot: 30, del: 30 });
    });
  });

  describe('upgrading from schema step 1', () => {
    const db = usePostgres();

    it('keeps the lease of a delivery claimed under step 1 (its end in next_attempt_at), then hands it out again', async () => {
      const step1 = POSTGRES_MIGRATIONS[0]!;
      await query(db.url, step1.up);
      await query(db.url, 'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)');
      await query(db.url, 'INSERT INTO schema_migrations VALUES (1, $1, 0)', [step1.name]);
      // Claimed by an instance of the previous release, whose lease runs until T0 + 30 s.
      await query(
        db.url,
        `INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, lease, lease_owner)
         VALUES ('web', 'Webhooks', 'message', 'old-claim', '{}', $1, $2, 1, 'old')`,
        [T0, T0 + 30_000],
      );
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      try {
        const versions = await query<{ version: number }>(db.url, 'SELECT version FROM schema_migrations ORDER BY version');
        expect(versions.map((v) => v.version)).to.deep.equal(POSTGRES_MIGRATIONS.map((m) => m.version));
        expect(await store.claim('web', T0 + 1, 10, LEASE)).to.deep.equal([]);
        expect(await store.nextDueAfter('web', T0 + 1)).to.equal(T0 + 30_000);
        const [again] = await store.claim('web', T0 + 30_000, 10, LEASE);
        expect(again).to.include({ messageId: 'old-claim', lease: 2 });
        // Now leased under step 2: not handed out again before its new lease ends.
        expect(await store.claim('web', T0 + 30_001, 10, LEASE)).to.deep.equal([]);
        expect(await store.nextDueAfter('web', T0 + 30_001)).to.equal(T0 + 60_000);
      } finally {
        await store.close();
      }
    });
  });
});
