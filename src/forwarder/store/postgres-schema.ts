import type { PoolClient } from 'pg';
import { stepsAfter, VERSION_TABLE } from './migrations';
import type { Migration } from './migrations';

/**
 * Advisory lock keys (the two-integer form: this class id, then the purpose), so eventrelay's
 * locks never collide with an application's own on the same database.
 */
export const LOCK_CLASS = 0x45_52_4c_59; // "ERLY"
export const LOCKS = { migrations: 1, prune: 2, audience: 3 } as const;

/**
 * The PostgreSQL store's schema, as ordered steps (same shape as the SQLite store's). While a
 * delivery is claimed, `next_attempt_at` holds the end of its lease. Counters are kept in shards
 * (a row per name and shard) so that instances committing at once do not queue on one row.
 */
export const POSTGRES_MIGRATIONS: readonly Migration<string>[] = [
  {
    version: 1,
    name: 'messages, deliveries with leases, audiences, sharded counters',
    up: `
CREATE TABLE messages (
  source text NOT NULL,
  message_id text NOT NULL,
  received_at bigint NOT NULL,
  PRIMARY KEY (source, message_id)
);
-- Rows arrive in time order: a BRIN index is tiny and nearly free to maintain, and enough for pruning.
CREATE INDEX messages_by_time ON messages USING brin (received_at);
CREATE TABLE deliveries (
  id bigserial PRIMARY KEY,
  source text NOT NULL,
  destination text NOT NULL,
  kind text NOT NULL,
  message_id text NOT NULL,
  body text NOT NULL,
  created_at bigint NOT NULL,
  status smallint NOT NULL DEFAULT 0,
  attempts integer NOT NULL DEFAULT 0,
  first_attempt_at bigint,
  next_attempt_at bigint NOT NULL,
  finished_at bigint,
  last_error text,
  lease integer NOT NULL DEFAULT 0,
  lease_owner text
);
CREATE INDEX deliveries_pending ON deliveries (source, next_attempt_at, id) WHERE status = 0;
CREATE INDEX deliveries_finished ON deliveries (finished_at) WHERE status <> 0;
CREATE TABLE audiences (
  source text NOT NULL,
  audience text NOT NULL,
  synced_at bigint NOT NULL,
  PRIMARY KEY (source, audience)
);
CREATE TABLE audience_members (
  source text NOT NULL,
  audience text NOT NULL,
  user_id text NOT NULL,
  PRIMARY KEY (source, audience, user_id)
);
CREATE TABLE counters (
  name text NOT NULL,
  shard smallint NOT NULL,
  value bigint NOT NULL,
  PRIMARY KEY (name, shard)
);
`,
  },
];

/** The version the database is at (0: empty). */
export async function postgresSchemaVersion(client: PoolClient): Promise<number> {
  const table = await client.query<{ found: string | null }>('SELECT to_regclass($1) AS found', [VERSION_TABLE]);
  if (table.rows[0]?.found == null) return 0;
  const row = await client.query<{ version: number }>(`SELECT coalesce(max(version), 0)::int AS version FROM ${VERSION_TABLE}`);
  return row.rows[0]!.version;
}

/**
 * Brings the schema to the latest version under an advisory lock, so that instances starting
 * together apply each step once; each step is one transaction. Returns the versions applied.
 */
export async function migratePostgres(client: PoolClient, now = Date.now()): Promise<number[]> {
  await client.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, LOCKS.migrations]);
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`);
    const steps = stepsAfter('PostgreSQL', POSTGRES_MIGRATIONS, await postgresSchemaVersion(client));
    for (const step of steps) {
      await client.query('BEGIN');
      try {
        await client.query(step.up);
        await client.query(`INSERT INTO ${VERSION_TABLE} (version, name, applied_at) VALUES ($1, $2, $3)`, [step.version, step.name, now]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
    return steps.map((s) => s.version);
  } finally {
    await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, LOCKS.migrations]);
  }
}
