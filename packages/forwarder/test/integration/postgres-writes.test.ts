import { describe, it } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/postgres';
import { CLAIM, RECORD, RECORD_DELIVERED } from '../../src/store/postgres/sql';
import { PostgresDeliveryLog } from '../../src/store/postgres/postgres-log';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/postgres-schema';
import { accepted, T0 } from '../unit/store/contract';
import { usePostgres } from '../../../../test/helpers/postgres';

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
  ins: number;
  upd: number;
  hot: number;
  del: number;
}

/**
 * A table's row writes as the server counts them, once `ready` holds: the statistics of ended
 * sessions arrive shortly after they end.
 */
async function tableStats(url: string, table: string, ready: (stats: TableStats) => boolean): Promise<TableStats | undefined> {
  let stats: TableStats | undefined;
  for (let i = 0; i < 100; i++) {
    [stats] = await query<TableStats>(
      url,
      'SELECT n_tup_ins::int AS ins, n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot, n_tup_del::int AS del FROM pg_stat_user_tables WHERE relname = $1',
      [table],
    );
    if (stats !== undefined && ready(stats)) return stats;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return stats;
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
      const stats = await tableStats(db.url, 'deliveries', (s) => s.upd >= 30 && s.del >= 30);
      expect(stats).to.deep.include({ upd: 30, hot: 30, del: 30 });
    });
  });

  describe('the delivery log', () => {
    const db = usePostgres();

    it('writes a flush of attempts (two per line) as one update per line, in place (HOT)', async () => {
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const log = new PostgresDeliveryLog(store.logConnections, { keepDelivered: 0 });
      const ids = Array.from({ length: 40 }, (_, i) => `log-hot-${i}`);
      // A body of a webhook's usual size: erased once delivered, it leaves the room the attempts take.
      const body = JSON.stringify({ type: 'track', event: 'Signed Up', properties: { plan: 'x'.repeat(300) } });
      const call = (id: string) => ({ source: 'web', kind: 'message' as const, messageId: id, type: 'track', userId: 'u', receivedAt: T0, body, state: 'pending' as const });
      try {
        log.add(ids.slice(0, 20).map(call));
        log.add(ids.slice(20).map(call));
        await log.flush();
        for (const id of ids) {
          log.attempt({ source: 'web', messageId: id, attempt: 1, at: T0 + 1, outcome: 'retry', urls: [{ url: 'http://a/', status: 503, error: 'HTTP', durationMs: 1 }] });
          log.attempt({ source: 'web', messageId: id, attempt: 2, at: T0 + 2, outcome: 'delivered', urls: [{ url: 'http://a/', status: 200, error: null, durationMs: 1 }] });
        }
        await log.flush();
        const detail = await log.get((await log.list({ messageId: 'log-hot-7', limit: 1 }))[0]!.id);
        expect(detail).to.deep.include({ state: 'delivered', attempts: 2, body: null, finishedAt: T0 + 2 });
        expect(detail!.attemptLog.map((a) => [a.attempt, a.status, a.outcome])).to.deep.equal([[1, 503, 'retry'], [2, 200, 'delivered']]);
        // The attempts are kept in their lines: no row of their own.
        expect(await query(db.url, 'SELECT count(*)::int AS n FROM log_attempts')).to.deep.equal([{ n: 0 }]);
      } finally {
        await log.close();
        await store.close();
      }
      const stats = await tableStats(db.url, 'log_messages', (s) => s.upd >= 40);
      // One update per line for its two attempts. In place unless the page is full: an index on a
      // column the update writes (as finished_at had) would make none of them HOT.
      expect(stats).to.deep.include({ upd: 40, del: 0 });
      expect(stats!.hot).to.be.at.least(36);
    });
  });

  describe('connections', () => {
    const db = usePostgres();

    it('the delivery log commits without waiting for the WAL; acknowledged messages do wait', async () => {
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      try {
        const { rows } = await store.logConnections.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
        expect(rows[0]!.synchronous_commit).to.equal('off');
        // The pool ingestion commits on keeps the server's setting (on by default).
        const durable = (store as unknown as { pool: pg.Pool }).pool;
        expect((await durable.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit).to.equal('on');
      } finally {
        await store.close();
      }
    });
  });

  describe('plans after the queue was vacuumed empty', () => {
    const db = usePostgres();

    /** Every node of a JSON plan that reads `table`: its type, index and index condition. */
    function scans(plan: unknown, table: string): Array<{ type: string; index?: string; cond?: string }> {
      const out: Array<{ type: string; index?: string; cond?: string }> = [];
      const visit = (node: Record<string, unknown>): void => {
        if (node['Relation Name'] === table && typeof node['Node Type'] === 'string' && /Scan/.test(node['Node Type'])) {
          out.push({ type: node['Node Type'], index: node['Index Name'] as string | undefined, cond: node['Index Cond'] as string | undefined });
        }
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) visit(child);
      };
      visit((plan as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
      return out;
    }

    // A healthy forwarder's queue is nearly empty whenever autovacuum looks at it, and VACUUM then
    // records it as holding no rows. The planner believes that until the next one, however many
    // deliveries a burst or an endpoint's outage queues meanwhile: a plan that reads the table
    // (or the pending index, which holds id only as its third column) to find a row by id would
    // read the whole queue for every claim and outcome. Measured in the benchmark: 3 to 12 times
    // the database's CPU per message, until the next VACUUM.
    it('claims and outcomes find their rows through an index, not by reading the queue, whatever the statistics say', async () => {
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      try {
        await store.accept(Array.from({ length: 20 }, (_, i) => accepted(`drained-${i}`)));
        const drained = await store.claim('web', T0, 100, LEASE);
        await store.record(drained.map((d) => ({ id: d.id, lease: d.lease, status: 'delivered' as const, attempts: 1, firstAttemptAt: T0, at: T0 + 1 })));
        await query(db.url, 'VACUUM (ANALYZE) deliveries');
        expect(await query(db.url, "SELECT reltuples FROM pg_class WHERE relname = 'deliveries'")).to.deep.equal([{ reltuples: 0 }]);
        // On the connections the store claims and records on: the plans a prepared statement
        // keeps (generic, made while the queue was empty: nothing queued since makes another)
        // and plans made for the values once deliveries are queued.
        const client = await store.logConnections.connect();
        const explain = async (statement: string, values: string) => {
          const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE ${statement}(${values})`);
          return scans(rows[0]['QUERY PLAN'], 'deliveries');
        };
        const claim = () => explain('test_claim', `'web', ${T0}, 64, 'a', ${T0 + 30_000}`);
        const record = () => explain('test_record', `'{1,2,3}', '{1,1,1}', '{1,0,2}', '{1,1,1}', '{0,0,0}', '{0,0,0}', '{NULL,NULL,NULL}', 0`);
        // Rows by id through the primary key (an index scan, or a bitmap of it for many ids).
        const recordDelivered = async () => {
          const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE test_record_delivered('{1,2,3}', 0)`);
          const plan = JSON.stringify(rows[0]['QUERY PLAN']);
          return { scans: scans(rows[0]['QUERY PLAN'], 'deliveries'), indexes: [...plan.matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]) };
        };
        try {
          await client.query(`PREPARE test_claim AS ${CLAIM}`);
          await client.query(`PREPARE test_record AS ${RECORD}`);
          await client.query(`PREPARE test_record_delivered AS ${RECORD_DELIVERED}`);
          await client.query('SET plan_cache_mode = force_generic_plan');
          await claim();
          await record();
          await recordDelivered();
          for (let i = 0; i < 6; i++) await store.accept(Array.from({ length: 500 }, (_, j) => accepted(`queued-${i}-${j}`)));
          for (const mode of ['force_generic_plan', 'force_custom_plan']) {
            await client.query(`SET plan_cache_mode = ${mode}`);
            const claimScans = await claim();
            expect(claimScans.map((x) => x.type), mode).to.not.include('Seq Scan');
            expect(claimScans.find((x) => x.index === 'deliveries_pending')?.cond, mode).to.match(/source/);
            const recordScans = await record();
            expect(recordScans.filter((x) => x.index === 'deliveries_pkey'), mode).to.have.length.of.at.least(2);
            // By id; the deliveries held behind an ordered retry through an index of the pending ones.
            for (const scan of recordScans) expect(['deliveries_pkey', 'deliveries_order', 'deliveries_pending'], mode).to.include(scan.index);
            const delivered = await recordDelivered();
            expect(delivered.scans.map((x) => x.type), mode).to.not.include('Seq Scan');
            // By id; for an ordered one, whether another of its user waits, through the index of pending ordered ones.
            expect(delivered.indexes, mode).to.deep.equal(['deliveries_pkey', 'deliveries_order']);
          }
          // A table no index serves is still read, and planned as cheap as it is: not compiled
          // (the server's JIT starts at a cost that a disabled scan always passes).
          const views = await client.query('EXPLAIN (FORMAT JSON) SELECT owner FROM instance_views WHERE watching_until > 0');
          expect(views.rows[0]['QUERY PLAN'][0]).to.not.have.property('JIT');
        } finally {
          await client.query('DEALLOCATE ALL; RESET plan_cache_mode');
          client.release();
        }
      } finally {
        await store.close();
      }
    });
  });

  describe('the delivery log, a call delivered before its line is written', () => {
    const db = usePostgres();

    it('inserts the line finished, without its body, and never updates it', async () => {
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const log = new PostgresDeliveryLog(store.logConnections, { keepDelivered: 0 });
      const ids = Array.from({ length: 20 }, (_, i) => `log-fold-${i}`);
      try {
        // Accepted and delivered within one flush's 50 ms, as most calls are.
        log.add(ids.map((id) => ({ source: 'web', kind: 'message' as const, messageId: id, type: 'track', userId: 'u', receivedAt: T0, body: '{"x":1}', state: 'pending' as const })));
        for (const id of ids) {
          log.attempt({ source: 'web', messageId: id, attempt: 1, at: T0 + 3, outcome: 'delivered', urls: [{ url: 'http://a/', status: 200, error: null, durationMs: 1 }] });
        }
        await log.flush();
        expect(await query(db.url, "SELECT count(*)::int AS n FROM log_messages WHERE state = 'delivered' AND body IS NULL AND attempts = 1")).to.deep.equal([{ n: 20 }]);
        expect(await query(db.url, 'SELECT count(*)::int AS n FROM log_attempts')).to.deep.equal([{ n: 0 }]);
        const [line] = await log.list({ messageId: 'log-fold-3', limit: 1 });
        expect((await log.get(line!.id))!.attemptLog.map((a) => [a.series, a.attempt, a.status, a.outcome])).to.deep.equal([[1, 1, 200, 'delivered']]);
      } finally {
        await log.close();
        await store.close();
      }
      const stats = await tableStats(db.url, 'log_messages', (s) => s.ins >= 20);
      expect(stats).to.deep.equal({ ins: 20, upd: 0, hot: 0, del: 0 });
    });
  });

  describe('upgrading from schema step 2', () => {
    const db = usePostgres();

    it('keeps the lines of a delivery log made by an earlier release, and prunes them without the old index', async () => {
      for (const step of POSTGRES_MIGRATIONS.slice(0, 2)) await query(db.url, step.up);
      await query(db.url, 'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)');
      await query(db.url, "INSERT INTO schema_migrations VALUES (1, 'one', 0), (2, 'two', 0)");
      // The log's tables as the previous release created them, with a line.
      await query(
        db.url,
        `CREATE TABLE log_messages (id bigserial PRIMARY KEY, source text NOT NULL, kind text NOT NULL, message_id text NOT NULL, type text, user_id text,
           received_at bigint NOT NULL, state text NOT NULL, attempts integer NOT NULL DEFAULT 0, series integer NOT NULL DEFAULT 1, updated_at bigint NOT NULL,
           finished_at bigint, reason text, body text)`,
      );
      await query(db.url, 'CREATE INDEX log_messages_finished ON log_messages (finished_at) WHERE finished_at IS NOT NULL');
      await query(db.url, "INSERT INTO log_messages (source, kind, message_id, received_at, state, updated_at, finished_at) VALUES ('web', 'message', 'old-line', $1, 'delivered', $1, $1)", [T0]);
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const log = new PostgresDeliveryLog(store.logConnections, { keepDelivered: 0 });
      try {
        const versions = await query<{ version: number }>(db.url, 'SELECT version FROM schema_migrations ORDER BY version');
        expect(versions.map((v) => v.version)).to.deep.equal(POSTGRES_MIGRATIONS.map((m) => m.version));
        const indexes = await query<{ indexname: string }>(db.url, "SELECT indexname FROM pg_indexes WHERE tablename = 'log_messages' ORDER BY indexname");
        // Step 15's index on the event name came and went (step 17): it cost every track call.
        expect(indexes.map((i) => i.indexname)).to.deep.equal(['log_messages_key', 'log_messages_pkey', 'log_messages_received', 'log_messages_user']);
        expect((await log.list({ limit: 10 })).map((m) => m.messageId)).to.deep.equal(['old-line']);
        expect(await log.prune(T0 + 1, T0 + 1)).to.equal(1);
        expect(await log.list({ limit: 10 })).to.deep.equal([]);
      } finally {
        await log.close();
        await store.close();
      }
    });
  });

  describe('upgrading from schema step 7', () => {
    const db = usePostgres();

    it("shows a line's attempts written by an earlier release (rows of log_attempts) with those it keeps now, in order, and prunes both", async () => {
      for (const step of POSTGRES_MIGRATIONS.slice(0, 7)) await query(db.url, step.up);
      await query(db.url, 'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)');
      for (const step of POSTGRES_MIGRATIONS.slice(0, 7)) await query(db.url, 'INSERT INTO schema_migrations VALUES ($1, $2, 0)', [step.version, step.name]);
      // A line the previous release wrote and attempted once (a retry), with its attempt row.
      const [line] = await query<{ id: number }>(
        db.url,
        `INSERT INTO log_messages (source, kind, message_id, type, user_id, received_at, state, attempts, updated_at, reason, body)
         VALUES ('web', 'message', 'upgraded', 'track', 'u', $1, 'retrying', 1, $2, 'HTTP 503 from http://a/', '{"x":1}') RETURNING id`,
        [T0, T0 + 10],
      );
      await query(
        db.url,
        `INSERT INTO log_attempts (delivery_id, series, attempt, at, url, status, error, duration_ms, outcome, next_attempt_at)
         VALUES ($1, 1, 1, $2, 'http://a/', 503, 'HTTP', 4, 'retry', $3)`,
        [line!.id, T0 + 10, T0 + 500],
      );
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const log = new PostgresDeliveryLog(store.logConnections, { keepDelivered: 0 });
      try {
        log.attempt({ source: 'web', messageId: 'upgraded', attempt: 2, at: T0 + 500, outcome: 'delivered', urls: [{ url: 'http://a/', status: 200, error: null, durationMs: 3 }] });
        const detail = (await log.get(line!.id))!;
        expect(detail).to.include({ state: 'delivered', attempts: 2, body: null });
        expect(detail.attemptLog).to.deep.equal([
          { series: 1, attempt: 1, at: T0 + 10, url: 'http://a/', status: 503, error: 'HTTP', durationMs: 4, outcome: 'retry', nextAttemptAt: T0 + 500, responseBody: null },
          { series: 1, attempt: 2, at: T0 + 500, url: 'http://a/', status: 200, error: null, durationMs: 3, outcome: 'delivered', nextAttemptAt: null, responseBody: null },
        ]);
        expect(await log.prune(T0 + 501, T0 + 501)).to.equal(2);
        expect(await query(db.url, 'SELECT count(*)::int AS n FROM log_attempts')).to.deep.equal([{ n: 0 }]);
        expect(await log.get(line!.id)).to.equal(undefined);
      } finally {
        await log.close();
        await store.close();
      }
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
        // Now leased under step 2: not handed out again before its new lease ends, which the
        // next claim finds (nextDueAfter leaves a claim's lease end out).
        expect(await store.claim('web', T0 + 30_001, 10, LEASE)).to.deep.equal([]);
        expect(await store.nextDueAfter('web', T0 + 30_001)).to.equal(undefined);
        expect(await store.claim('web', T0 + 59_999, 10, LEASE)).to.deep.equal([]);
        expect(await store.claim('web', T0 + 60_000, 10, LEASE)).to.have.length(1);
      } finally {
        await store.close();
      }
    });
  });
});
