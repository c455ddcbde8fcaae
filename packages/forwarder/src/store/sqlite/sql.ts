import { AUDIENCE_CHUNK } from '../audience-change';
import { PARKED_AT } from '../contract';
import { ABANDONED, DELIVERED, FAILED, PENDING } from '../statuses';

/**
 * Every statement the SQLite store runs, by the part of the store that runs it, as text: each part
 * prepares its own once, when it is made (`db.prepare(QUEUE.due)`), and names them the same. The
 * schema and its migration steps stay in `sqlite-schema.ts` (the versioned schema).
 */

/** Rows removed per statement when pruning, so a prune never holds the database for long. */
export const PRUNE_CHUNK = 2000;

/** The columns of a delivery log line in a list (`LoggedMessage`). */
export const LOG_COLUMNS = `id, source, source_id, kind, message_id, type, event, user_id, received_at, state, attempts, series, updated_at, finished_at, reason,
  body IS NOT NULL AS has_body`;

/** The columns of an endpoint state. */
export const ENDPOINT_COLUMNS = 'source, url_key, url, failures, failing_since, last_failure_at, last_error, disabled_at, disabled_reason';

/** A delivery's end, delivered (any lease) or failed (the outcome's lease); see QUEUE. */
const DELIVERED_SET = `UPDATE deliveries SET status = ${DELIVERED}, attempts = ?, first_attempt_at = ?, finished_at = ?, body = '', lease_owner = NULL
         WHERE id = ? AND status = ${PENDING}`;
const FAILED_SET = `UPDATE deliveries SET status = ${FAILED}, attempts = ?, first_attempt_at = ?, finished_at = ?, last_error = ?, lease_owner = NULL
         WHERE id = ? AND status = ${PENDING} AND lease = ?`;

/** The queue (`SqliteStore`): accepted messages, deliveries, claims, outcomes, audiences, counters. */
export const QUEUE = {
  // No other process can hold a lease here: what a killed predecessor had claimed is due now.
  releaseLeases: `UPDATE deliveries SET next_attempt_at = ?, lease_owner = NULL WHERE status = ${PENDING} AND lease_owner IS NOT NULL`,
  insertMessage: 'INSERT OR IGNORE INTO messages (source, message_id, received_at) VALUES (?, ?, ?)',
  insertDelivery: 'INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, order_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  // Leased by the commit that stores it, as a claim leases (due again at the lease's end).
  insertLeased: 'INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, lease, lease_owner, order_key) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)',
  // Whether a delivery of the key is pending (an ordered one is leased at acceptance only when none is).
  keyPending: `SELECT 1 FROM deliveries WHERE status = ${PENDING} AND source = ? AND order_key = ? LIMIT 1`,
  addCounter: 'UPDATE counters SET value = value + ? WHERE name = ?',
  // An ordered delivery (order_key) only when it is the oldest pending one of its key: the
  // others wait for it, in flight or not (see ForwarderStore#claim).
  due: `SELECT id, lease, source, destination, kind, message_id, body, created_at, attempts, first_attempt_at, next_attempt_at, order_key
         FROM deliveries d WHERE status = ${PENDING} AND source = ? AND next_attempt_at <= ?
         AND (order_key IS NULL OR NOT EXISTS (
           SELECT 1 FROM deliveries e WHERE e.status = ${PENDING} AND e.source = d.source AND e.order_key = d.order_key AND e.id < d.id))
         ORDER BY next_attempt_at, id LIMIT ?`,
  // The ordered deliveries behind one that is to be retried wait at least as long: claims
  // do not read them over and over meanwhile.
  holdBehind: `UPDATE deliveries SET next_attempt_at = @at WHERE status = ${PENDING} AND source = @source AND order_key = @key AND id > @id AND next_attempt_at < @at`,
  orderOf: 'SELECT source, order_key FROM deliveries WHERE id = ?',
  waitingFor: `SELECT b.message_id FROM deliveries d JOIN deliveries b
             ON b.status = ${PENDING} AND b.order_key IS NOT NULL AND b.source = d.source AND b.order_key = d.order_key AND b.id < d.id
           WHERE d.status = ${PENDING} AND d.order_key IS NOT NULL AND d.source = ? AND d.message_id = ? ORDER BY b.id LIMIT 1`,
  // While leased, next_attempt_at is the end of the lease: the delivery is due again then.
  lease: `UPDATE deliveries SET lease = lease + 1, lease_owner = ?, next_attempt_at = ? WHERE id = ?`,
  // A parked batch member is never due: not a time to wake for.
  nextDue: `SELECT min(next_attempt_at) AS at FROM deliveries WHERE status = ${PENDING} AND source = ? AND next_attempt_at > ? AND next_attempt_at < ${PARKED_AT}`,
  retry: `UPDATE deliveries SET attempts = ?, first_attempt_at = ?, next_attempt_at = ?, last_error = ?, lease_owner = NULL
         WHERE id = ? AND status = ${PENDING} AND lease = ?`,
  // A delivered body is dropped at once: it is not needed any more, and user data should not
  // linger (deletion requests). A failed one is kept until pruned, for inspection. A delivered
  // outcome counts even from an expired lease: the receiver has the message.
  delivered: DELIVERED_SET,
  // An ordered delivery's end: its source and key come back, to release the next of the key.
  // (RETURNING costs SQLite a temporary table per statement: an unordered one goes without.)
  deliveredOrdered: `${DELIVERED_SET} RETURNING source, order_key`,
  // Given up by its source's deletion while this lease was out: the attempt in flight then succeeded.
  deliveredAbandoned: `UPDATE deliveries SET status = ${DELIVERED}, attempts = ?, first_attempt_at = ?, finished_at = ?, body = '', last_error = NULL
         WHERE id = ? AND status = ${ABANDONED} AND lease = ?`,
  sourceLive: 'SELECT 1 FROM sources WHERE name = ? AND id = ?',
  failed: FAILED_SET,
  failedOrdered: `${FAILED_SET} RETURNING source, order_key`,
  counters: 'SELECT name, value FROM counters',
  // Calls not yet delivered: a batch delivery is not one (its members, parked, are).
  queue: `SELECT count(*) AS pending, coalesce(sum(attempts > 0), 0) AS retrying, min(created_at) AS oldest FROM deliveries WHERE status = ${PENDING} AND kind != 'batch'`,
  audienceSynced: 'SELECT 1 FROM audiences WHERE source = ? AND audience = ?',
  audienceMembers: `SELECT user_id FROM audience_members WHERE source = ? AND audience = ? AND user_id > ? ORDER BY user_id LIMIT ${AUDIENCE_CHUNK}`,
  audienceMark: 'INSERT OR REPLACE INTO audiences (source, audience, synced_at) VALUES (?, ?, ?)',
  memberAdd: 'INSERT OR IGNORE INTO audience_members (source, audience, user_id) VALUES (?, ?, ?)',
  memberRemove: 'DELETE FROM audience_members WHERE source = ? AND audience = ? AND user_id = ?',
  pruneDeliveries: `DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE status != ${PENDING} AND finished_at < ? LIMIT ${PRUNE_CHUNK})`,
  pruneMessages: `DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE received_at < ? ORDER BY id LIMIT ${PRUNE_CHUNK})`,
  syncFull: 'PRAGMA synchronous = FULL',
  syncNormal: 'PRAGMA synchronous = NORMAL',
} as const;

/**
 * The queue's batches (`SqliteBatches`, contract/batches.ts): batch deliveries are rows of
 * `deliveries` (kind 'batch'), linked to their members in `batch_members`.
 */
export const BATCHES = {
  leaseOf: `SELECT lease FROM deliveries WHERE id = ? AND status = ${PENDING}`,
  // Leased as a claim at `now` leases (token 1, due again at the lease's end).
  insert: `INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, lease, lease_owner)
         VALUES (?, ?, 'batch', ?, ?, ?, ?, 1, ?)`,
  link: 'INSERT INTO batch_members (batch_id, delivery_id, position) VALUES (?, ?, ?)',
  // Never due, and the claim that handed it out (token `?`, still pending) holds it no more (its token is old).
  park: `UPDATE deliveries SET next_attempt_at = ${PARKED_AT}, lease = lease + 1, lease_owner = NULL WHERE id = ? AND status = ${PENDING} AND lease = ?`,
  members: `SELECT d.id, d.source, d.message_id, d.order_key, d.created_at, d.status FROM batch_members m JOIN deliveries d ON d.id = m.delivery_id
         WHERE m.batch_id = ? ORDER BY m.position`,
  linked: 'SELECT delivery_id FROM batch_members WHERE batch_id = ?',
  held: `SELECT 1 FROM deliveries WHERE id = ? AND kind = 'batch' AND status = ${PENDING} AND lease = ?`,
  // The trigger of schema step 10 drops its links.
  remove: 'DELETE FROM deliveries WHERE id = ?',
  retry: `UPDATE deliveries SET attempts = ?, first_attempt_at = ?, next_attempt_at = ?, last_error = ?, lease_owner = NULL
         WHERE id = ? AND kind = 'batch' AND status = ${PENDING} AND lease = ?`,
  // As QUEUE.delivered: from any lease while pending; the body goes at once.
  delivered: `UPDATE deliveries SET status = ${DELIVERED}, attempts = ?, first_attempt_at = ?, finished_at = ?, body = '', lease_owner = NULL
         WHERE id = ? AND kind = 'batch' AND status = ${PENDING}`,
  // Given up by its source's deletion while this lease was out (see QUEUE.deliveredAbandoned).
  deliveredAbandoned: `UPDATE deliveries SET status = ${DELIVERED}, attempts = ?, first_attempt_at = ?, finished_at = ?, body = '', last_error = NULL
         WHERE id = ? AND kind = 'batch' AND status = ${ABANDONED} AND lease = ?`,
  failed: `UPDATE deliveries SET status = ${FAILED}, attempts = ?, first_attempt_at = ?, finished_at = ?, last_error = ?, lease_owner = NULL
         WHERE id = ? AND kind = 'batch' AND status = ${PENDING} AND lease = ?`,
  // The members of a delivered batch still pending (or, `?` = ABANDONED, given up by their source's deletion).
  deliverMembers: `UPDATE deliveries SET status = ${DELIVERED}, attempts = ?, first_attempt_at = ?, finished_at = ?, body = '', lease_owner = NULL,
           last_error = CASE WHEN status = ${ABANDONED} THEN NULL ELSE last_error END
         WHERE status = ? AND id IN (SELECT delivery_id FROM batch_members WHERE batch_id = ?)
         RETURNING id, source, message_id, order_key, created_at`,
  // The members of a failed batch still pending none of whose batches is pending or delivered.
  failMembers: `UPDATE deliveries SET status = ${FAILED}, attempts = ?, first_attempt_at = ?, finished_at = ?, last_error = ?, lease_owner = NULL
         WHERE status = ${PENDING} AND id IN (SELECT delivery_id FROM batch_members WHERE batch_id = ?)
         AND NOT EXISTS (SELECT 1 FROM batch_members o JOIN deliveries b ON b.id = o.batch_id
           WHERE o.delivery_id = deliveries.id AND b.status IN (${PENDING}, ${DELIVERED}))
         RETURNING id, source, message_id, order_key, created_at`,
} as const;

/** The registry of sources (`SqliteSetup`): sources, write keys and the setup revision. */
export const SETUP = {
  revision: 'SELECT revision FROM setup_revision WHERE id = 1',
  bump: 'UPDATE setup_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision',
  sources: 'SELECT name, id, enabled, webhooks, applied, settings, created_at, updated_at, schema FROM sources ORDER BY name',
  source: 'SELECT name, id, enabled, webhooks, applied, settings, created_at, updated_at, schema FROM sources WHERE name = ?',
  keys: 'SELECT id, source, digest, last4, origin, created_at, expires_at FROM source_keys ORDER BY source, created_at, id',
  insertSource: 'INSERT OR IGNORE INTO sources (name, id, enabled, webhooks, applied, settings, created_at, updated_at, schema) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  updateSource: 'UPDATE sources SET enabled = ?, webhooks = ?, applied = ?, settings = ?, updated_at = ?, schema = ? WHERE name = ?',
  deleteSource: 'DELETE FROM sources WHERE name = ?',
  deleteKeys: 'DELETE FROM source_keys WHERE source = ?',
  deleteAudiences: 'DELETE FROM audiences WHERE source = ?',
  deleteMembers: 'DELETE FROM audience_members WHERE source = ?',
  // The calls given up count failed; a batch delivery is none (its members are).
  failDeliveries: `UPDATE deliveries SET status = ${ABANDONED}, finished_at = ?, last_error = ?, lease_owner = NULL WHERE source = ? AND status = ${PENDING}
         RETURNING kind = 'batch' AS batch`,
  addFailed: "UPDATE counters SET value = value + ? WHERE name = 'failed'",
  keyByDigest: 'SELECT id, source FROM source_keys WHERE digest = ?',
  reviveKey: 'UPDATE source_keys SET expires_at = NULL, origin = ? WHERE id = ?',
  insertKey: 'INSERT INTO source_keys (id, source, digest, last4, origin, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  keysOf: 'SELECT id, origin, expires_at FROM source_keys WHERE source = ?',
  expireKey: 'UPDATE source_keys SET expires_at = ? WHERE id = ?',
  pruneKeys: 'DELETE FROM source_keys WHERE expires_at IS NOT NULL AND expires_at < ?',
} as const;

/** Endpoint states (`SqliteEndpointStore`). */
export const ENDPOINTS = {
  list: `SELECT ${ENDPOINT_COLUMNS} FROM endpoint_states`,
  get: `SELECT ${ENDPOINT_COLUMNS} FROM endpoint_states WHERE source = ? AND url_key = ?`,
  put: `INSERT OR REPLACE INTO endpoint_states (${ENDPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
} as const;

/** What sources send and their usage per day (`SqliteUsageStore`). */
export const USAGE = {
  known: 'SELECT 1 FROM source_events WHERE source_id = ? AND type = ? AND event = ?',
  kept: "SELECT count(*) FROM source_events WHERE source_id = ? AND type = 'track' AND event <> ''",
  addEvent: `INSERT INTO source_events (source_id, type, event, source, count, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (source_id, type, event) DO UPDATE SET count = count + excluded.count, source = excluded.source,
           first_seen = min(first_seen, excluded.first_seen), last_seen = max(last_seen, excluded.last_seen)`,
  addDay: `INSERT INTO source_usage (source_id, day, source, received, filtered, rejected, delivered, failed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (source_id, day) DO UPDATE SET source = excluded.source, received = received + excluded.received,
           filtered = filtered + excluded.filtered, rejected = rejected + excluded.rejected,
           delivered = delivered + excluded.delivered, failed = failed + excluded.failed`,
  events: 'SELECT source_id, source, type, event, count, first_seen, last_seen FROM source_events WHERE source_id = ?',
  days: 'SELECT source_id, source, day, received, filtered, rejected, delivered, failed FROM source_usage WHERE source_id = ? AND day BETWEEN ? AND ? ORDER BY day',
  pruneEvents: 'DELETE FROM source_events WHERE source_id NOT IN (SELECT id FROM sources)',
  pruneDays: 'DELETE FROM source_usage WHERE day < ? OR source_id NOT IN (SELECT id FROM sources)',
} as const;

/**
 * The delivery log's own tables in the queue's database, named `log_*` so they never meet the
 * queue's schema. `SqliteDeliveryLog` makes them on first use, on the store's database or on one
 * of its own: they are not a step of the versioned schema (whose step 9 has its own frozen copy).
 */
export const LOG_TABLES = {
  schema: `
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
  source_id TEXT,
  event TEXT,
  responses TEXT
);
CREATE INDEX IF NOT EXISTS log_messages_key ON log_messages (source, message_id);
CREATE INDEX IF NOT EXISTS log_messages_user ON log_messages (user_id);
CREATE INDEX IF NOT EXISTS log_messages_finished ON log_messages (finished_at) WHERE finished_at IS NOT NULL;
-- Attempts written by releases before attempt_log; read and pruned with their line.
CREATE TABLE IF NOT EXISTS log_attempts (
  id INTEGER PRIMARY KEY,
  delivery_id INTEGER NOT NULL,
  series INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  at INTEGER NOT NULL,
  url TEXT NOT NULL,
  status INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  next_attempt_at INTEGER
);
CREATE INDEX IF NOT EXISTS log_attempts_delivery ON log_attempts (delivery_id);
`,
  /** The columns a table of the log has (a log made by an earlier release lacks some of `added`). */
  columns: 'SELECT name FROM pragma_table_info(?)',
  /** The columns added to the log since its first release, in order, each made when its table lacks it. */
  added: [
    // Its attempts gain the next attempt time (null for the old ones).
    { table: 'log_attempts', column: 'next_attempt_at', add: 'ALTER TABLE log_attempts ADD COLUMN next_attempt_at INTEGER' },
    // Its lines keep their attempts from now on (see attemptEntries): no row and no index entry per attempt.
    { table: 'log_messages', column: 'attempt_log', add: 'ALTER TABLE log_messages ADD COLUMN attempt_log TEXT' },
    // And name the source's id (see SourceRecord.id): null in the lines written before.
    { table: 'log_messages', column: 'source_id', add: 'ALTER TABLE log_messages ADD COLUMN source_id TEXT' },
    // And the track event name and the receivers' answers (the store's schema step 9 adds them; a log on its own database here).
    { table: 'log_messages', column: 'event', add: 'ALTER TABLE log_messages ADD COLUMN event TEXT' },
    { table: 'log_messages', column: 'responses', add: 'ALTER TABLE log_messages ADD COLUMN responses TEXT' },
  ],
  /** The event filter's index, made by earlier releases (and the store's schema step 9), dropped as step 11 drops it: it cost every track call. */
  dropEventIndex: 'DROP INDEX IF EXISTS log_messages_event',
} as const;

/** The delivery log (`SqliteDeliveryLog`): its lines and their attempts. */
export const LOG = {
  insert: `INSERT INTO log_messages (source, kind, message_id, type, user_id, received_at, state, updated_at, finished_at, reason, body, source_id, event)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  insertAttempted: `INSERT INTO log_messages (source, kind, message_id, type, user_id, received_at, state, attempts, updated_at, finished_at, reason, body, attempt_log, source_id, event, responses)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  findLive: `SELECT id, series FROM log_messages WHERE source = ? AND message_id = ? AND state NOT IN ('duplicate', 'refused', 'filtered')
         ORDER BY id DESC LIMIT 1`,
  update: `UPDATE log_messages SET state = @state, attempts = attempts + 1, updated_at = @updatedAt, finished_at = @finishedAt, reason = @reason,
         body = CASE WHEN @erase THEN NULL ELSE body END, attempt_log = coalesce(attempt_log || ',', '') || @entries,
         responses = CASE WHEN @erase THEN NULL WHEN @responses IS NULL THEN responses ELSE coalesce(responses || ',', '') || @responses END
         WHERE id = @id AND (state IN ('pending', 'retrying') OR @state = 'delivered')`,
  replay: `UPDATE log_messages SET series = series + 1, state = 'pending', finished_at = NULL, updated_at = ?, reason = NULL
         WHERE id = ? AND state IN ('failed', 'delivered') AND body IS NOT NULL RETURNING series, source, message_id`,
  unreplay: `UPDATE log_messages SET series = series - 1, state = ?, updated_at = ?, finished_at = ?, reason = ? WHERE id = ? AND series = ? AND state = 'pending'`,
  get: `SELECT ${LOG_COLUMNS}, body, attempt_log, responses FROM log_messages WHERE id = ?`,
  attempts: 'SELECT series, attempt, at, url, status, error, duration_ms, outcome, next_attempt_at FROM log_attempts WHERE delivery_id = ? ORDER BY id',
  failed: `SELECT ${LOG_COLUMNS}, body, attempt_log, responses FROM log_messages WHERE source = ? AND state = 'failed' AND body IS NOT NULL AND received_at >= ? AND received_at < ?
         AND (? IS NULL OR source_id IS NULL OR source_id = ?) ORDER BY id`,
  pruneIds: `SELECT id FROM log_messages WHERE finished_at < ? LIMIT ${PRUNE_CHUNK}`,
  pruneMessages: 'DELETE FROM log_messages WHERE id IN (SELECT value FROM json_each(?))',
  pruneAttempts: 'DELETE FROM log_attempts WHERE delivery_id IN (SELECT value FROM json_each(?))',
  eraseDelivered: `UPDATE log_messages SET body = NULL, responses = NULL WHERE id IN (SELECT id FROM log_messages WHERE state = 'delivered' AND finished_at < ? AND body IS NOT NULL
         LIMIT ${PRUNE_CHUNK})`,
  abandon: `UPDATE log_messages SET state = 'failed', finished_at = ?, updated_at = ?, reason = ?
         WHERE source = ? AND state IN ('pending', 'retrying') AND (? IS NULL OR source_id IS NULL OR source_id = ?)`,
} as const;
/** A page of the delivery log: the lines that match every condition of `where` (`?` placeholders), newest first, then `LIMIT ?`. */
export function listLogLines(where: readonly string[]): string {
  return `SELECT ${LOG_COLUMNS} FROM log_messages ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
}
