import type { PoolClient } from 'pg';
import { stepsAfter, VERSION_TABLE } from '../migrations';
import type { Migration } from '../migrations';

/**
 * Advisory lock keys (the two-integer form: this class id, then the purpose), so eventrelay's
 * locks never collide with an application's own on the same database.
 */
export const LOCK_CLASS = 0x45_52_4c_59; // "ERLY"
export const LOCKS = { migrations: 1, prune: 2, audience: 3, logPrune: 4, order: 5 } as const;

/**
 * Locks the user keys of ordered deliveries about to be stored (`sources` and `keys`, one pair per
 * delivery, keys null for unordered ones), each once and in a fixed order (no deadlock between two
 * commits), until the end of the transaction; then tells, for each delivery with `wanted`, whether
 * no delivery of its key is pending. VOLATILE: its query takes a snapshot after the locks, so it
 * sees what a commit that held one of them stored. Two commits storing calls of one user thus go
 * one after the other, and the second sees the first's: only one may lease a call of that user at
 * acceptance (see the store's ACCEPT).
 */
const ORDER_HEADS = `CREATE OR REPLACE FUNCTION eventrelay_order_heads(sources text[], keys text[], wanted boolean[]) RETURNS boolean[]
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  h integer;
BEGIN
  FOR h IN SELECT DISTINCT hashtext(x.s || ':' || x.k) FROM unnest(sources, keys) AS x(s, k) WHERE x.k IS NOT NULL ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(${LOCK_CLASS + LOCKS.order}, h);
  END LOOP;
  RETURN (SELECT array_agg(CASE WHEN x.w THEN NOT EXISTS (
      SELECT 1 FROM deliveries e WHERE e.status = 0 AND e.order_key IS NOT NULL AND e.source = x.s AND e.order_key = x.k) ELSE false END ORDER BY x.n)
    FROM unnest(sources, keys, wanted) WITH ORDINALITY AS x(s, k, w, n));
END
$fn$;`;

/**
 * The PostgreSQL store's schema, as ordered steps (same shape as the SQLite store's). While a
 * delivery is claimed, `leased_until` holds the end of its lease (step 1 kept it in
 * `next_attempt_at`). Counters are kept in shards
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
  {
    version: 2,
    name: 'leases in a column of their own, so that claims are HOT updates',
    // A claim writes only columns no index covers (lease, lease_owner, leased_until), so PostgreSQL
    // updates the row in place on its page (a HOT update: no new index entries) when the page has
    // room, which a fillfactor of 50 keeps; the table is a queue (delivered rows are deleted), so the
    // space costs little. Rows claimed under step 1 carry their lease end in next_attempt_at, which
    // step 2's claims still honour.
    up: `
ALTER TABLE deliveries ADD COLUMN leased_until bigint NOT NULL DEFAULT 0;
ALTER TABLE deliveries SET (fillfactor = 50);
`,
  },
  {
    version: 3,
    name: 'the delivery log, updated in place',
    // The delivery log's tables (created by earlier releases outside the versioned steps, hence
    // IF NOT EXISTS). An attempt changes only columns no index covers (state, attempts, times,
    // reason, body), so each line is updated in place (HOT) when its page has room: pruning
    // finds finished lines through received_at (never updated; a line finishes after it
    // arrives) instead of an index on finished_at.
    up: `
CREATE TABLE IF NOT EXISTS log_messages (
  id bigserial PRIMARY KEY,
  source text NOT NULL,
  kind text NOT NULL,
  message_id text NOT NULL,
  type text,
  user_id text,
  received_at bigint NOT NULL,
  state text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  series integer NOT NULL DEFAULT 1,
  updated_at bigint NOT NULL,
  finished_at bigint,
  reason text,
  body text
);
CREATE INDEX IF NOT EXISTS log_messages_key ON log_messages (source, message_id);
CREATE INDEX IF NOT EXISTS log_messages_user ON log_messages (user_id);
DROP INDEX IF EXISTS log_messages_finished;
CREATE INDEX IF NOT EXISTS log_messages_received ON log_messages (received_at);
ALTER TABLE log_messages SET (fillfactor = 50);
CREATE TABLE IF NOT EXISTS log_attempts (
  id bigserial PRIMARY KEY,
  delivery_id bigint NOT NULL,
  series integer NOT NULL,
  attempt integer NOT NULL,
  at bigint NOT NULL,
  url text NOT NULL,
  status integer,
  error text,
  duration_ms integer NOT NULL,
  outcome text NOT NULL
);
CREATE INDEX IF NOT EXISTS log_attempts_delivery ON log_attempts (delivery_id);
`,
  },
  {
    version: 4,
    name: 'runtime setup: sources, their Webhooks settings and write key digests',
    // webhooks: the destination's settings as JSON text (secrets included: write-only through the
    // API); source_keys keeps SHA-256 digests of write keys, never a key. Every setup write locks
    // the one setup_revision row, bumps it and NOTIFYs eventrelay_setup with the new revision.
    up: `
CREATE TABLE sources (
  name text PRIMARY KEY,
  enabled boolean NOT NULL DEFAULT false,
  webhooks text,
  applied text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE TABLE source_keys (
  id text PRIMARY KEY,
  source text NOT NULL,
  digest text NOT NULL UNIQUE,
  last4 text NOT NULL,
  origin text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint
);
CREATE INDEX source_keys_by_source ON source_keys (source);
CREATE TABLE setup_revision (id integer PRIMARY KEY CHECK (id = 1), revision bigint NOT NULL);
INSERT INTO setup_revision (id, revision) VALUES (1, 0);
`,
  },
  {
    version: 5,
    name: 'rate limits: the send slots of each limited URL, shared by the instances',
    // key: a digest of the source and URL (never the URL); tat: the next free slot (GCRA), in
    // epoch ms on the database's clock; asked_at, first_slot, granted: the last claim's answer.
    up: `
CREATE TABLE IF NOT EXISTS rate_budgets (
  key text PRIMARY KEY,
  tat float8 NOT NULL,
  asked_at float8 NOT NULL,
  first_slot float8 NOT NULL,
  granted integer NOT NULL
);
`,
  },
  {
    version: 6,
    name: 'endpoint states: runs of failures and disabled webhook URLs, shared by the instances',
    // url_key: a digest of the source and the full URL (which may hold a token); url: the URL as
    // shown, without credentials or query.
    up: `
CREATE TABLE IF NOT EXISTS endpoint_states (
  source text NOT NULL,
  url_key text NOT NULL,
  url text NOT NULL,
  failures integer NOT NULL DEFAULT 0,
  failing_since bigint,
  last_failure_at bigint,
  last_error text,
  disabled_at bigint,
  disabled_reason text,
  PRIMARY KEY (source, url_key)
);
`,
  },
  {
    version: 7,
    name: 'the delivery log: the next attempt time of each retried attempt',
    up: `
ALTER TABLE log_attempts ADD COLUMN IF NOT EXISTS next_attempt_at bigint;
`,
  },
  {
    version: 8,
    name: 'instance views: the endpoint health and timeline of each instance, and its live-stream subscribers',
    // One row per instance (owner: its instanceId), written about once a second while its view
    // changed: the latest state of each URL and until when it has a live-stream subscriber. Its
    // minute buckets in rows of their own, so that a write rewrites the current minute, never the
    // hour. format: the version of the text in endpoints, health and timeline (JSON the metrics
    // code writes; no body, secret or URL query). Views not written for an hour are removed.
    up: `
CREATE TABLE IF NOT EXISTS instance_views (
  owner text PRIMARY KEY,
  format integer NOT NULL,
  updated_at bigint NOT NULL,
  watching_until bigint NOT NULL DEFAULT 0,
  endpoints text NOT NULL
);
CREATE TABLE IF NOT EXISTS instance_minutes (
  owner text NOT NULL,
  minute bigint NOT NULL,
  health text NOT NULL,
  timeline text NOT NULL,
  PRIMARY KEY (owner, minute)
);
`,
  },
  {
    version: 9,
    name: 'the delivery log: attempts kept in their line',
    // A line's attempts as JSON text in the line (see attemptEntries in sql-rows.ts), appended by
    // the update that writes the line's new state anyway: no row and no index entries per
    // attempt. No index covers the column, so the update stays in place (HOT). Attempts written
    // by earlier releases stay in log_attempts, read and pruned with their line. A nullable
    // column without a default is added without rewriting the table.
    up: `
ALTER TABLE log_messages ADD COLUMN IF NOT EXISTS attempt_log text;
`,
  },
  {
    version: 10,
    name: 'sources: an id of their own, so that a source made again under a deleted one\'s name is another',
    // Each existing source gets a random id; new ones get theirs from the forwarder. The delivery
    // log's lines name the id of the source that sent them (null in older lines).
    up: `
ALTER TABLE sources ADD COLUMN IF NOT EXISTS id text;
UPDATE sources SET id = md5(name || random()::text || clock_timestamp()::text) WHERE id IS NULL;
ALTER TABLE sources ALTER COLUMN id SET NOT NULL;
ALTER TABLE log_messages ADD COLUMN IF NOT EXISTS source_id text;
`,
  },
  {
    version: 11,
    name: 'deliveries in order per user: the user key of each ordered delivery',
    // order_key: set for a destination with ordering "user"; the index finds the oldest pending
    // delivery of a key (the one a claim may take). A nullable column without a default is added
    // without rewriting the table.
    up: `
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS order_key text;
CREATE INDEX IF NOT EXISTS deliveries_order ON deliveries (source, order_key, id) WHERE status = 0 AND order_key IS NOT NULL;
`,
  },
  {
    version: 12,
    name: 'sources: settings of their own (allowed browser origins, ingestion rate limit)',
    // The settings as JSON text; NULL when none is set. A nullable column without a default is
    // added without rewriting the table.
    up: `
ALTER TABLE sources ADD COLUMN IF NOT EXISTS settings text;
`,
  },
  {
    version: 13,
    name: 'source schema: controls per source, what each source sends and its usage per day',
    // schema: the source's controls as JSON text. source_events: a row per call type and track
    // event name a source sent (event '' for the other types, and for the track calls past the
    // names kept), added to by every instance; source_usage: a row per source and UTC day (days
    // since the epoch). Both by the source's id, so that a source made again under a deleted
    // one's name shares none.
    up: `
ALTER TABLE sources ADD COLUMN IF NOT EXISTS schema text;
CREATE TABLE IF NOT EXISTS source_events (
  source_id text NOT NULL,
  type text NOT NULL,
  event text NOT NULL,
  source text NOT NULL,
  count bigint NOT NULL,
  first_seen bigint NOT NULL,
  last_seen bigint NOT NULL,
  PRIMARY KEY (source_id, type, event)
);
CREATE TABLE IF NOT EXISTS source_usage (
  source_id text NOT NULL,
  day integer NOT NULL,
  source text NOT NULL,
  received bigint NOT NULL DEFAULT 0,
  filtered bigint NOT NULL DEFAULT 0,
  rejected bigint NOT NULL DEFAULT 0,
  delivered bigint NOT NULL DEFAULT 0,
  failed bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (source_id, day)
);
`,
  },
  {
    version: 14,
    name: 'deliveries in order per user: a lock per user key, so that a call may be leased at acceptance',
    up: ORDER_HEADS,
  },
  {
    version: 15,
    name: 'delivery log: the track event name of each line, and the receivers\' answers to its attempts',
    // event: the track call's event name (null for other types), searched by GET
    // /admin/messages?event=; responses: the first 2,048 bytes of each answer (sql-rows.ts
    // responseEntries), erased with the body. The index leaves out the lines without an event.
    up: `
ALTER TABLE log_messages ADD COLUMN IF NOT EXISTS event text;
ALTER TABLE log_messages ADD COLUMN IF NOT EXISTS responses text;
CREATE INDEX IF NOT EXISTS log_messages_event ON log_messages (event) WHERE event IS NOT NULL;
`,
  },
  {
    version: 16,
    name: 'batched delivery: the calls each batch delivery holds, in the order of its body',
    // A batch is a row of deliveries (kind 'batch'); its members are the calls it holds, by
    // position. The index finds a member's batches (a failed batch fails a member only when none
    // of them is pending or delivered). A batch's links go with its row (split, prune).
    up: `
CREATE TABLE IF NOT EXISTS batch_members (
  batch_id bigint NOT NULL,
  delivery_id bigint NOT NULL,
  position integer NOT NULL,
  PRIMARY KEY (batch_id, position)
);
CREATE INDEX IF NOT EXISTS batch_members_by_delivery ON batch_members (delivery_id);
`,
  },
  {
    version: 17,
    name: 'delivery log: the event filter without an index of its own',
    // Step 15's index cost every logged track call an index insert and its WAL; ?event= now reads
    // the newest lines first, as the type and state filters do.
    up: `
DROP INDEX IF EXISTS log_messages_event;
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
