import type BetterSqlite3 from 'better-sqlite3';
import { stepsAfter, VERSION_TABLE } from '../migrations';
import type { Migration } from '../migrations';

/**
 * The SQLite store's schema, as ordered steps. Step 1 is the schema of the releases before
 * versioning, written so that it is a no-op on a data directory they created (`IF NOT EXISTS`,
 * `OR IGNORE`): such a directory has no version table, counts as version 0, and upgrades.
 */
export const SQLITE_MIGRATIONS: readonly Migration<string>[] = [
  {
    version: 1,
    name: 'messages, deliveries, audiences, counters',
    up: `
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  message_id TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  UNIQUE (source, message_id)
);
CREATE TABLE IF NOT EXISTS deliveries (
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  destination TEXT NOT NULL,
  kind TEXT NOT NULL,
  message_id TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  first_attempt_at INTEGER,
  next_attempt_at INTEGER NOT NULL,
  finished_at INTEGER,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS pending_by_source ON deliveries (source, next_attempt_at, id) WHERE status = 0;
CREATE TABLE IF NOT EXISTS audiences (
  source TEXT NOT NULL,
  audience TEXT NOT NULL,
  synced_at INTEGER NOT NULL,
  PRIMARY KEY (source, audience)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audience_members (
  source TEXT NOT NULL,
  audience TEXT NOT NULL,
  user_id TEXT NOT NULL,
  PRIMARY KEY (source, audience, user_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO counters (name, value) VALUES ('accepted', 0), ('duplicates', 0), ('delivered', 0), ('failed', 0);
`,
  },
  {
    version: 2,
    name: 'leases: claim token and holder of each delivery',
    // While claimed, next_attempt_at holds the end of the lease.
    up: `
ALTER TABLE deliveries ADD COLUMN lease INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN lease_owner TEXT;
`,
  },
  {
    version: 3,
    name: 'runtime setup: sources, their Webhooks settings and write key digests',
    // webhooks: the destination's settings as JSON (secrets included: write-only through the API);
    // source_keys keeps SHA-256 digests of write keys, never a key.
    up: `
CREATE TABLE sources (
  name TEXT PRIMARY KEY,
  enabled INTEGER NOT NULL DEFAULT 0,
  webhooks TEXT,
  applied TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE source_keys (
  id TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  digest TEXT NOT NULL UNIQUE,
  last4 TEXT NOT NULL,
  origin TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER
) WITHOUT ROWID;
CREATE INDEX source_keys_by_source ON source_keys (source);
CREATE TABLE setup_revision (id INTEGER PRIMARY KEY CHECK (id = 1), revision INTEGER NOT NULL);
INSERT INTO setup_revision (id, revision) VALUES (1, 0);
`,
  },
  {
    version: 4,
    name: 'endpoint states: runs of failures and disabled webhook URLs',
    // url_key: a digest of the source and the full URL (which may hold a token); url: the URL as
    // shown, without credentials or query.
    up: `
CREATE TABLE IF NOT EXISTS endpoint_states (
  source TEXT NOT NULL,
  url_key TEXT NOT NULL,
  url TEXT NOT NULL,
  failures INTEGER NOT NULL DEFAULT 0,
  failing_since INTEGER,
  last_failure_at INTEGER,
  last_error TEXT,
  disabled_at INTEGER,
  disabled_reason TEXT,
  PRIMARY KEY (source, url_key)
) WITHOUT ROWID;
`,
  },
  {
    version: 5,
    name: 'sources: an id of their own, so that a source made again under a deleted one\'s name is another',
    // Each existing source gets a random id; new ones get theirs from the forwarder.
    up: `
ALTER TABLE sources ADD COLUMN id TEXT NOT NULL DEFAULT '';
UPDATE sources SET id = lower(hex(randomblob(16))) WHERE id = '';
`,
  },
  {
    version: 6,
    name: 'deliveries in order per user: the user key of each ordered delivery',
    // order_key: set for a destination with ordering "user"; the index finds the oldest pending
    // delivery of a key (the one a claim may take).
    up: `
ALTER TABLE deliveries ADD COLUMN order_key TEXT;
CREATE INDEX deliveries_order ON deliveries (source, order_key, id) WHERE status = 0 AND order_key IS NOT NULL;
`,
  },
  {
    version: 7,
    name: 'sources: settings of their own (allowed browser origins, ingestion rate limit)',
    // The settings as JSON text; NULL when none is set.
    up: `
ALTER TABLE sources ADD COLUMN settings TEXT;
`,
  },
  {
    version: 8,
    name: 'source schema: controls per source, what each source sends and its usage per day',
    // schema: the source's controls as JSON. source_events: a row per call type and track event
    // name a source sent (event '' for the other types, and for the track calls past the names
    // kept); source_usage: a row per source and UTC day (days since the epoch). Both by the
    // source's id, so that a source made again under a deleted one's name shares none.
    up: `
ALTER TABLE sources ADD COLUMN schema TEXT;
CREATE TABLE source_events (
  source_id TEXT NOT NULL,
  type TEXT NOT NULL,
  event TEXT NOT NULL,
  source TEXT NOT NULL,
  count INTEGER NOT NULL,
  first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL,
  PRIMARY KEY (source_id, type, event)
) WITHOUT ROWID;
CREATE TABLE source_usage (
  source_id TEXT NOT NULL,
  day INTEGER NOT NULL,
  source TEXT NOT NULL,
  received INTEGER NOT NULL DEFAULT 0,
  filtered INTEGER NOT NULL DEFAULT 0,
  rejected INTEGER NOT NULL DEFAULT 0,
  delivered INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (source_id, day)
) WITHOUT ROWID;
`,
  },
  {
    version: 9,
    name: 'delivery log: the track event name of each line, and the receivers\' answers to its attempts',
    // The log's table as the releases before this step made it (the log makes it otherwise, on
    // first use), then: event, the track call's event name (null for other types), searched by
    // GET /admin/messages?event=; responses, the first 2,048 bytes of each answer (sql-rows.ts
    // responseEntries), erased with the body.
    up: `
CREATE TABLE IF NOT EXISTS log_messages (
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  kind TEXT NOT NULL,
  message_id TEXT NOT NULL,
  type TEXT,
  user_id TEXT,
  received_at INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  series INTEGER NOT NULL DEFAULT 1,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER,
  reason TEXT,
  body TEXT,
  attempt_log TEXT,
  source_id TEXT
);
ALTER TABLE log_messages ADD COLUMN event TEXT;
ALTER TABLE log_messages ADD COLUMN responses TEXT;
CREATE INDEX IF NOT EXISTS log_messages_event ON log_messages (event) WHERE event IS NOT NULL;
`,
  },
  {
    version: 10,
    name: 'batched delivery: the calls each batch delivery holds, in the order of its body',
    // A batch is a row of deliveries (kind 'batch'); its members are the calls it holds, by
    // position. The index finds a member's batches (a failed batch fails a member only when none
    // of them is pending or delivered). The trigger drops a batch's links with its row (prune,
    // split): no statement has to remember them.
    up: `
CREATE TABLE batch_members (
  batch_id INTEGER NOT NULL,
  delivery_id INTEGER NOT NULL,
  position INTEGER NOT NULL,
  PRIMARY KEY (batch_id, position)
) WITHOUT ROWID;
CREATE INDEX batch_members_by_delivery ON batch_members (delivery_id);
CREATE TRIGGER batch_members_go_with_batch AFTER DELETE ON deliveries FOR EACH ROW WHEN OLD.kind = 'batch'
BEGIN
  DELETE FROM batch_members WHERE batch_id = OLD.id;
END;
`,
  },
  {
    version: 11,
    name: 'delivery log: the event filter without an index of its own',
    // Step 9's index cost every logged track call a B-tree insert (1.2% of a message's
    // instructions); ?event= now reads the newest lines first, as the type and state filters do.
    up: `
DROP INDEX IF EXISTS log_messages_event;
`,
  },
];

/** The version a data directory is at (0: created before versioning, or empty). */
export function sqliteSchemaVersion(db: BetterSqlite3.Database): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(VERSION_TABLE);
  if (table === undefined) return 0;
  const row = db.prepare(`SELECT max(version) AS version FROM ${VERSION_TABLE}`).get() as { version: number | null };
  return row.version ?? 0;
}

/** Brings the schema to the latest version, all steps in one transaction. Returns the versions applied. */
export function migrateSqlite(db: BetterSqlite3.Database, now = Date.now()): number[] {
  const run = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const steps = stepsAfter('SQLite', SQLITE_MIGRATIONS, sqliteSchemaVersion(db));
    const mark = db.prepare(`INSERT INTO ${VERSION_TABLE} (version, name, applied_at) VALUES (?, ?, ?)`);
    for (const step of steps) {
      db.exec(step.up);
      mark.run(step.version, step.name, now);
    }
    return steps.map((s) => s.version);
  });
  // IMMEDIATE: the write lock from the start, so a concurrent opener cannot slip in between.
  return run.immediate();
}
