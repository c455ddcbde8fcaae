import { AUDIENCE_CHUNK } from '../audience-change';
import { PARKED_AT } from '../contract';
import { ABANDONED, DELIVERED, FAILED, PENDING } from '../statuses';

/**
 * Every statement the PostgreSQL store runs, as text (as pg-boss keeps its in `plans`): the
 * queue's long ones as named constants with what they do, the others by the part of the store
 * that runs them (QUEUE, LOCK, CLUSTER, ENDPOINTS, LOG, RATE, SETUP, USAGE). Statements built
 * from a request (the log's filters, a source's changed columns) are small functions here. The
 * schema and its migration steps stay in `postgres-schema.ts` (the versioned schema); transaction
 * control (BEGIN, COMMIT, ROLLBACK) stays where the transaction is.
 */

/** Rows removed per statement when pruning. */
export const PRUNE_CHUNK = 2000;

/**
 * Deliveries made by no ingested call (replays, notices). Ordered ones (`$8`: any) take their
 * keys' locks first (`hd`, evaluated once before the first row: see ACCEPT), so that their ids
 * come after those of a commit of the same user that leased one.
 */
export const INSERT_DELIVERIES = `WITH hd AS (SELECT CASE WHEN $8::boolean THEN eventrelay_order_heads($1::text[], $7::text[], NULL) END AS heads)
INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, order_key)
  SELECT s, d, k, m, b, c, c, q FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[]) WITH ORDINALITY AS x(s, d, k, m, b, c, q, n)
  WHERE (SELECT count(*) FROM hd) = 1
  ORDER BY n`;

/**
 * A group commit: the sources its requests were checked against that still exist (`live`: names
 * `$15` with ids `$16`, each row locked against deletion until the commit; `ok` adds the unchecked
 * names `$17`), the messages of those sources new to the store (`m`), their deliveries (`d`,
 * leased with `$14` as owner until `$13` when the request asked; `$19` the user key of an ordered
 * one, leased only when it is the first of its key here and `hd` finds none of its key pending),
 * and the counters (`c`: `$12` and `$18` are each request's source and number of messages).
 * The rows are the new messages, then a row per live source (message_id null). Deliveries are
 * inserted in the order the calls came (`n`), so that their ids are that order: the order in
 * which the ordered ones of a user go (the messages are sorted, for the order of their locks).
 *
 * `FOR KEY SHARE`: a deletion's `DELETE FROM sources` waits for this commit (and then fails what
 * it stored), or this waits for the deletion and finds no row (and stores nothing). A change of a
 * source's settings (an update of other columns) does not wait for it, nor it for the change.
 *
 * Two forms, each prepared once: ACCEPT, and ACCEPT_ORDERED for a commit with ordered deliveries.
 * There `hd` (`$20`: which deliveries may be leased) locks the user keys of the ordered deliveries
 * and tells which may be leased (eventrelay_order_heads). `live`'s filter on it makes it run once,
 * before the first message row is inserted: every commit takes those locks before any other, so
 * two commits of one user never wait for each other's rows.
 */
const acceptStatement = (ordered: boolean) => `WITH ${ordered ? 'hd AS (SELECT eventrelay_order_heads($5::text[], $19::text[], $20::boolean[]) AS heads),' : ''}
live AS (
  SELECT s.name FROM sources s JOIN unnest($15::text[], $16::text[]) AS q(n, i) ON s.name = q.n AND s.id = q.i
  ${ordered ? 'WHERE (SELECT count(*) FROM hd) = 1' : ''}
  FOR KEY SHARE OF s),
ok AS (SELECT name FROM live UNION ALL SELECT unnest($17::text[])),
m AS (
  INSERT INTO messages (source, message_id, received_at)
  SELECT x.s, x.m, x.r FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x(s, m, r) WHERE x.s IN (SELECT name FROM ok)
  ON CONFLICT DO NOTHING RETURNING source, message_id),
n AS (SELECT coalesce(sum(r.n), 0)::bigint AS total FROM unnest($12::text[], $18::bigint[]) AS r(s, n) WHERE r.s IN (SELECT name FROM ok)),
d AS (
  INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, lease, lease_owner, leased_until, order_key)
  SELECT x.s, x.d, x.k, x.m, x.b, x.c, coalesce(x.l, x.c), CASE WHEN x.l IS NULL THEN 0 ELSE 1 END, CASE WHEN x.l IS NOT NULL THEN $14 END, coalesce(x.l, 0), x.q
  FROM (SELECT y.o, y.s, y.d, y.k, y.m, y.b, y.c, ${ordered ? 'CASE WHEN y.q IS NULL OR (SELECT heads FROM hd)[y.n] THEN y.l END' : 'y.l'} AS l, y.q, y.n
    FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $13::bigint[], $19::text[])
    WITH ORDINALITY AS y(o, s, d, k, m, b, c, l, q, n)) x
  JOIN m ON m.source = x.s AND m.message_id = x.o
  ORDER BY x.n
  RETURNING id, source, message_id, destination, lease),
c AS (
  INSERT INTO counters (name, shard, value)
  SELECT v.name, $11, v.value FROM n, LATERAL (VALUES ('accepted', n.total), ('duplicates', n.total - (SELECT count(*) FROM m))) AS v(name, value)
  ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
SELECT m.source, m.message_id, d.id, d.destination FROM m LEFT JOIN d ON d.lease = 1 AND d.source = m.source AND d.message_id = m.message_id
UNION ALL SELECT name, NULL, NULL, NULL FROM live`;

export const ACCEPT = acceptStatement(false);

export const ACCEPT_ORDERED = acceptStatement(true);

/**
 * A claim: up to `$3` deliveries of source `$1` due at `$2` (their retry time and any lease ended),
 * oldest first, leased to `$4` until `$5`; an ordered one (`order_key`) only when no older one of
 * its key is pending, leased or not (a row another claim holds is skipped, and the rows behind it
 * see it pending: two instances never take two of a key). It writes only columns no index
 * covers: a HOT update, in place on the row's page.
 */
export const CLAIM = `WITH c AS (
   SELECT id, greatest(next_attempt_at, leased_until) AS due_at FROM deliveries p
   WHERE status = ${PENDING} AND source = $1 AND next_attempt_at <= $2 AND leased_until <= $2
   AND (order_key IS NULL OR NOT EXISTS (
     SELECT 1 FROM deliveries e WHERE e.status = ${PENDING} AND e.order_key IS NOT NULL AND e.source = p.source AND e.order_key = p.order_key AND e.id < p.id))
   ORDER BY next_attempt_at, id LIMIT $3
   FOR UPDATE SKIP LOCKED)
 UPDATE deliveries d SET lease = d.lease + 1, lease_owner = $4, leased_until = $5
 FROM c WHERE d.id = c.id
 RETURNING d.id, d.lease, d.source, d.destination, d.kind, d.message_id, d.body, d.created_at, d.attempts, d.first_attempt_at, d.order_key, c.due_at`;

/**
 * For a written outcome (`w`: id, status, source, order_key): an ordered delivery finished with
 * another of its key pending. The statement's snapshot still shows the row itself pending, hence
 * `id <>`; unordered rows never read the index.
 */
const NEXT_OF_KEY = `CASE WHEN w.order_key IS NULL OR w.status = ${PENDING} THEN false ELSE EXISTS (
   SELECT 1 FROM deliveries e WHERE e.status = ${PENDING} AND e.order_key IS NOT NULL AND e.source = w.source AND e.order_key = w.order_key AND e.id <> w.id) END`;

/** An outcome `o` (status, attempts, first_at, at, error) written on its row `d`: RECORD's and BATCHES.end's. */
const OUTCOME_SET = `status = o.status, attempts = o.attempts, first_attempt_at = o.first_at,
     next_attempt_at = CASE WHEN o.status = ${PENDING} THEN o.at ELSE d.next_attempt_at END,
     finished_at = CASE WHEN o.status = ${PENDING} THEN NULL ELSE o.at END,
     last_error = o.error, leased_until = 0, lease_owner = NULL`;

/**
 * Outcomes, one per row of the arrays: a delivered delivery's row is deleted (its count is kept),
 * one row version less than an update, and no index entries; retries and failures are updated,
 * each only with its lease. Returns the ids written, each with `next`: it was an ordered delivery,
 * now finished, with another of its key pending (RecordResult.released). `d.status + 0` rather than `d.status`: the
 * pending index (`WHERE status = 0`) holds id only as its third column, and a planner that takes
 * the queue for empty would otherwise pick it to look rows up by id, reading all of it each time.
 */
export const RECORD = `WITH o AS (
   SELECT * FROM unnest($1::bigint[], $2::int[], $3::smallint[], $4::int[], $5::bigint[], $6::bigint[], $7::text[])
     AS o(id, lease, status, attempts, first_at, at, error)),
 x AS (
   DELETE FROM deliveries d USING o
   WHERE d.id = o.id AND o.status = ${DELIVERED} AND d.status + 0 = ${PENDING}
   RETURNING d.id, o.status, d.source, d.order_key),
 u AS (
   UPDATE deliveries d SET ${OUTCOME_SET}
   FROM o
   WHERE d.id = o.id AND o.status <> ${DELIVERED} AND d.status + 0 = ${PENDING} AND d.lease = o.lease
   RETURNING d.id, o.status, d.source, d.order_key, o.at),
 h AS (
   UPDATE deliveries e SET next_attempt_at = u.at FROM u
   WHERE u.status = ${PENDING} AND u.order_key IS NOT NULL AND e.status = ${PENDING} AND e.order_key IS NOT NULL
     AND e.source = u.source AND e.order_key = u.order_key AND e.id > u.id AND e.next_attempt_at < u.at),
 w AS (SELECT id, status, source, order_key FROM x UNION ALL SELECT id, status, source, order_key FROM u),
 c AS (
   INSERT INTO counters (name, shard, value)
   SELECT CASE WHEN status = ${DELIVERED} THEN 'delivered' ELSE 'failed' END, $8, count(*) FROM w
   WHERE status <> ${PENDING} GROUP BY status
   ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
 SELECT id, source, ${NEXT_OF_KEY} AS next FROM w`;

/**
 * Delivered outcomes RECORD and RECORD_DELIVERED did not write, for deliveries given up by their
 * source's deletion while the same lease was out (an attempt in flight at the deletion): deleted
 * as delivered, and counted delivered instead of failed. Run only for such outcomes (rare).
 */
export const RECORD_ABANDONED = `WITH x AS (
   DELETE FROM deliveries d USING unnest($1::bigint[], $2::int[]) AS o(id, lease)
   WHERE d.id = o.id AND d.status + 0 = ${ABANDONED} AND d.lease = o.lease
   RETURNING d.id),
 c AS (
   INSERT INTO counters (name, shard, value)
   SELECT v.name, $3, v.value FROM (SELECT count(*) AS n FROM x) k, LATERAL (VALUES ('delivered', k.n), ('failed', -k.n)) AS v(name, value)
   WHERE k.n > 0
   ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
 SELECT id FROM x`;

/**
 * RECORD for the usual batch, every outcome delivered: the rows deleted by id (whoever holds
 * their lease, as RECORD does), and the count. One array instead of seven, no join.
 */
export const RECORD_DELIVERED = `WITH w AS (
   DELETE FROM deliveries WHERE id = ANY($1::bigint[]) AND status + 0 = ${PENDING}
   RETURNING id, source, order_key, ${DELIVERED} AS status),
 c AS (
   INSERT INTO counters (name, shard, value)
   SELECT 'delivered', $2, count(*) FROM w HAVING count(*) > 0
   ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
 SELECT id, source, ${NEXT_OF_KEY} AS next FROM w`;

/**
 * The CTEs that store batch deliveries from parameters `$at`.. (source, destination, messageId,
 * body; created at, leased until, lease owner; links: place, member, position), `gate` applied to
 * the insert; `r` holds their ids in the order given.
 */
function storedBatches(at: number, gate: string): string {
  const $ = (k: number): string => `$${at + k}`;
  return `b AS (
       INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at, lease, lease_owner, leased_until)
       SELECT x.s, x.d, 'batch', x.m, x.b, ${$(4)}, ${$(5)}, 1, ${$(6)}, ${$(5)}
       FROM unnest(${$(0)}::text[], ${$(1)}::text[], ${$(2)}::text[], ${$(3)}::text[]) WITH ORDINALITY AS x(s, d, m, b, n)${gate}
       ORDER BY x.n
       RETURNING id),
     r AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM b),
     l AS (
       INSERT INTO batch_members (batch_id, delivery_id, position)
       SELECT r.id, y.member, y.position FROM r JOIN unnest(${$(7)}::bigint[], ${$(8)}::bigint[], ${$(9)}::int[]) AS y(n, member, position) ON y.n = r.n)`;
}

/**
 * The queue's batches (`PostgresBatches`, contract/batches.ts): batch deliveries are rows of
 * `deliveries` (kind 'batch'), linked to their members in `batch_members`. Every statement that
 * writes a member or a batch row locks the rows in id order first (BATCHES.seal, in the same
 * statement; BATCHES.lock, in the same transaction): two instances recording batches that share members take
 * their locks in one order, and the second sees what the first wrote.
 */
export const BATCHES = {
  /**
   * Locks batch rows `$1` in id order, then the members of those batches still pending (or given up
   * by their source's deletion) in id order: one round trip (an Append runs its branches in turn).
   * Answers the batch rows; the last row (id NULL) only closes the members' branch. (`status + 0`:
   * see RECORD.)
   */
  lock: `WITH b AS (SELECT id, status, lease FROM deliveries WHERE id = ANY($1::bigint[]) AND kind = 'batch' ORDER BY id FOR UPDATE),
     m AS (
       SELECT id FROM deliveries WHERE id IN (SELECT delivery_id FROM batch_members WHERE batch_id = ANY($1::bigint[]))
       AND status + 0 IN (${PENDING}, ${ABANDONED}) ORDER BY id FOR UPDATE)
   SELECT id, status, lease FROM b
   UNION ALL SELECT NULL, NULL, NULL FROM (SELECT count(*) FROM m) k`,
  linked: 'SELECT delivery_id FROM batch_members WHERE batch_id = $1',
  members: `SELECT d.id, d.source, d.message_id, d.order_key, d.created_at, d.status FROM batch_members m JOIN deliveries d ON d.id = m.delivery_id
       WHERE m.batch_id = $1 ORDER BY m.position`,
  /**
   * Seals a batch in one statement (no transaction of its own): locks members `$1` in id order,
   * and only when each is pending under its token `$2` (`held`), parks those in a batch (never
   * due, token bumped, no holder) and stores batch deliveries `$3`-`$6` (source, destination, messageId,
   * body), created at `$7`, leased to `$9` until `$8` as a claim leases, with their links
   * (`$10`-`$12`: the batch's place in `$3`, the member, its position). The batches' ids follow
   * the order given (`n`), as ACCEPT's deliveries do. The gate is a one-time filter: the locks
   * are taken before any row is written.
   */
  seal: `WITH h AS (
       SELECT id, lease FROM deliveries WHERE id = ANY($1::bigint[]) AND status + 0 = ${PENDING} ORDER BY id FOR UPDATE),
     ok AS (
       SELECT count(*) = cardinality($1::bigint[]) AS held FROM h JOIN unnest($1::bigint[], $2::int[]) AS m(id, lease) ON m.id = h.id AND m.lease = h.lease),
     p AS (
       UPDATE deliveries SET next_attempt_at = ${PARKED_AT}, lease = lease + 1, lease_owner = NULL, leased_until = 0
       WHERE id = ANY($11::bigint[]) AND status + 0 = ${PENDING} AND (SELECT held FROM ok)),
     ${storedBatches(3, ' WHERE (SELECT held FROM ok)')}
   SELECT (SELECT held FROM ok) AS held, ARRAY(SELECT id FROM r ORDER BY id) AS ids`,
  /** A split's parts (`$1`-`$11` as `seal`'s `$3`-`$12`), stored and linked; their members stay parked. */
  insert: `WITH ${storedBatches(1, '')}
   SELECT id FROM r ORDER BY id`,
  // A batch delivery answered 413, while its lease holds: removed with its links, for its parts.
  remove: `WITH g AS (DELETE FROM deliveries WHERE id = $1 AND kind = 'batch' AND status + 0 = ${PENDING} AND lease = $2 RETURNING id),
     l AS (DELETE FROM batch_members WHERE batch_id IN (SELECT id FROM g))
   SELECT id FROM g`,
  /**
   * In one statement, on rows `lock` locked: the outcomes decided on the batch rows (`$1`-`$6`:
   * retries get status 0; a delivered batch's body goes), and the members of delivered batches `$7`
   * still in `$8` (pending, or ABANDONED for a batch delivered under the lease out at its source's
   * deletion), delivered with the batch's attempts (`$9`-`$11`), counted delivered (and no longer
   * failed, given up ones) on counter shard `$12`. The members' update reads no batch row, so it
   * needs nothing of the batches' update in the same snapshot.
   */
  end: `WITH w AS (
       UPDATE deliveries d SET ${OUTCOME_SET}, body = CASE WHEN o.status = ${DELIVERED} THEN '' ELSE d.body END
       FROM unnest($1::bigint[], $2::smallint[], $3::int[], $4::bigint[], $5::bigint[], $6::text[]) AS o(id, status, attempts, first_at, at, error)
       WHERE d.id = o.id),
     m AS (
       SELECT DISTINCT ON (k.delivery_id) k.delivery_id, o.batch_id, o.from_status, o.attempts, o.first_at, o.at
       FROM batch_members k JOIN unnest($7::bigint[], $8::smallint[], $9::int[], $10::bigint[], $11::bigint[]) AS o(batch_id, from_status, attempts, first_at, at)
         ON k.batch_id = o.batch_id
       ORDER BY k.delivery_id, o.batch_id),
     x AS (
       UPDATE deliveries d SET status = ${DELIVERED}, attempts = m.attempts, first_attempt_at = m.first_at, finished_at = m.at, body = '',
         last_error = CASE WHEN d.status = ${ABANDONED} THEN NULL ELSE d.last_error END, leased_until = 0, lease_owner = NULL
       FROM m WHERE d.id = m.delivery_id AND d.status + 0 = m.from_status
       RETURNING d.id, d.source, d.message_id, d.order_key, d.created_at, m.batch_id, m.from_status),
     c AS (
       INSERT INTO counters (name, shard, value)
       SELECT v.name, $12, v.value FROM (SELECT count(*) AS n, count(*) FILTER (WHERE from_status = ${ABANDONED}) AS r FROM x) k,
         LATERAL (VALUES ('delivered', k.n), ('failed', -k.r)) AS v(name, value)
       WHERE v.value <> 0
       ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
   SELECT id, source, message_id, order_key, created_at, batch_id FROM x`,
  /**
   * The members of failed batches `$1` still pending none of whose batches is pending or
   * delivered, failed with the batch's reason; counted failed on shard `$6`.
   */
  failMembers: `WITH m AS (
       SELECT DISTINCT ON (k.delivery_id) k.delivery_id, o.batch_id, o.attempts, o.first_at, o.at, o.reason
       FROM batch_members k JOIN unnest($1::bigint[], $2::int[], $3::bigint[], $4::bigint[], $5::text[]) AS o(batch_id, attempts, first_at, at, reason)
         ON k.batch_id = o.batch_id
       ORDER BY k.delivery_id, o.batch_id),
     x AS (
       UPDATE deliveries d SET status = ${FAILED}, attempts = m.attempts, first_attempt_at = m.first_at, finished_at = m.at, last_error = m.reason,
         leased_until = 0, lease_owner = NULL
       FROM m WHERE d.id = m.delivery_id AND d.status + 0 = ${PENDING}
         AND NOT EXISTS (SELECT 1 FROM batch_members h JOIN deliveries b ON b.id = h.batch_id
           WHERE h.delivery_id = d.id AND b.status IN (${PENDING}, ${DELIVERED}))
       RETURNING d.id, d.source, d.message_id, d.order_key, d.created_at, m.batch_id),
     c AS (
       INSERT INTO counters (name, shard, value)
       SELECT 'failed', $6, count(*) FROM x HAVING count(*) > 0
       ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value)
   SELECT id, source, message_id, order_key, created_at, batch_id FROM x`,
  // For each ended ordered member (`$1` source, `$2` key): whether another of its key is pending.
  nextOfKey: `SELECT x.s AS source, EXISTS (
       SELECT 1 FROM deliveries e WHERE e.status = ${PENDING} AND e.order_key IS NOT NULL AND e.source = x.s AND e.order_key = x.k) AS next
     FROM unnest($1::text[], $2::text[]) AS x(s, k)`,
} as const;

/** The other instances with a live-stream subscriber, and until when. */
export const WATCHERS = 'SELECT owner, watching_until FROM instance_views WHERE owner <> $1 AND watching_until > $2';

/** The columns of a delivery log line in a list (`LoggedMessage`). */
export const LOG_COLUMNS = `id, source, source_id, kind, message_id, type, event, user_id, received_at, state, attempts, series, updated_at, finished_at, reason,
  body IS NOT NULL AS has_body`;

/** The newest line of each (source, messageId) that attempts go to: not a duplicate, refused or filtered one. */
export const FIND_LIVE = `SELECT DISTINCT ON (l.source, l.message_id) l.id, l.source, l.message_id
  FROM log_messages l JOIN unnest($1::text[], $2::text[]) AS k(source, message_id) ON l.source = k.source AND l.message_id = k.message_id
  WHERE l.state NOT IN ('duplicate', 'refused', 'filtered')
  ORDER BY l.source, l.message_id, l.id DESC`;

/**
 * Whether attempts (`x`) decide a line's state: always while no attempt has (state `pending`:
 * the line's time is then its receipt or replay, perhaps on another machine's clock), else while
 * it is retrying when they are at least as recent as the attempt that did. One that waited for
 * its line may arrive after a newer one; attempts by different instances on one delivery are a
 * retry delay or a lease apart, far more than clocks differ. A finished line changes only from
 * failed to delivered: its source was deleted while the attempt was in flight (the queue wrote
 * that outcome; attempts it did not write, stale, never reach the log).
 */
const NEWER = `(l.state = 'pending' OR (l.state = 'retrying' AND x.updated_at >= l.updated_at) OR (l.state = 'failed' AND x.state = 'delivered'))`;

/** Counts of what sources send, added to their rows. */
export const ADD_EVENTS = `INSERT INTO source_events (source_id, type, event, source, count, first_seen, last_seen)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[])
  ON CONFLICT (source_id, type, event) DO UPDATE SET count = source_events.count + EXCLUDED.count, source = EXCLUDED.source,
    first_seen = least(source_events.first_seen, EXCLUDED.first_seen), last_seen = greatest(source_events.last_seen, EXCLUDED.last_seen)`;

/** Usage per source and day, added to its rows. */
export const ADD_DAYS = `INSERT INTO source_usage (source_id, day, source, received, filtered, rejected, delivered, failed)
  SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])
  ON CONFLICT (source_id, day) DO UPDATE SET source = EXCLUDED.source, received = source_usage.received + EXCLUDED.received,
    filtered = source_usage.filtered + EXCLUDED.filtered, rejected = source_usage.rejected + EXCLUDED.rejected,
    delivered = source_usage.delivered + EXCLUDED.delivered, failed = source_usage.failed + EXCLUDED.failed`;

/** The columns of an endpoint state. */
export const ENDPOINT_COLUMNS = 'source, url_key, url, failures, failing_since, last_failure_at, last_error, disabled_at, disabled_reason';

/** The queue's other statements (`PostgresStore`): ordered waits, due times, audiences, counts. */
export const QUEUE = {
  waitingFor: `SELECT b.message_id FROM deliveries d JOIN deliveries b
         ON b.status = ${PENDING} AND b.order_key IS NOT NULL AND b.source = d.source AND b.order_key = d.order_key AND b.id < d.id
       WHERE d.status = ${PENDING} AND d.order_key IS NOT NULL AND d.source = $1 AND d.message_id = $2 ORDER BY b.id LIMIT 1`,
  // A parked batch member is never due: not a time to wake for.
  nextDue: `SELECT min(next_attempt_at) AS at FROM deliveries WHERE status = ${PENDING} AND source = $1 AND next_attempt_at > $2 AND next_attempt_at < ${PARKED_AT}`,
  audienceLock: 'SELECT pg_advisory_lock($1, hashtext($2))',
  audienceSynced: 'SELECT 1 FROM audiences WHERE source = $1 AND audience = $2',
  audienceMembers: `SELECT user_id FROM audience_members WHERE source = $1 AND audience = $2 AND user_id > $3 ORDER BY user_id LIMIT ${AUDIENCE_CHUNK}`,
  memberAdd: 'INSERT INTO audience_members (source, audience, user_id) SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING',
  memberRemove: 'DELETE FROM audience_members WHERE source = $1 AND audience = $2 AND user_id = ANY($3::text[])',
  audienceMark: 'INSERT INTO audiences (source, audience, synced_at) VALUES ($1, $2, $3) ON CONFLICT (source, audience) DO UPDATE SET synced_at = EXCLUDED.synced_at',
  audienceUnlock: 'SELECT pg_advisory_unlock($1, hashtext($2))',
  counters: 'SELECT name, sum(value)::bigint AS value FROM counters GROUP BY name',
  // Calls not yet delivered: a batch delivery is not one (its members, parked, are).
  queue: `SELECT count(*)::int AS pending, count(*) FILTER (WHERE attempts > 0)::int AS retrying, min(created_at) AS oldest
         FROM deliveries WHERE status = ${PENDING} AND kind <> 'batch'`,
} as const;

/** Advisory locks: one pruner at a time over all instances (the queue's and the log's). */
export const LOCK = {
  tryLock: 'SELECT pg_try_advisory_lock($1, $2) AS ok',
  unlock: 'SELECT pg_advisory_unlock($1, $2)',
} as const;

/** The instances' views and the live stream's relay (`PostgresCluster`, `PostgresListener`). */
export const CLUSTER = {
  exchange: `WITH v AS (
         INSERT INTO instance_views (owner, format, updated_at, watching_until, endpoints) VALUES ($1, $3, $2, $4, $5)
         ON CONFLICT (owner) DO UPDATE SET format = EXCLUDED.format, updated_at = EXCLUDED.updated_at,
           watching_until = EXCLUDED.watching_until, endpoints = EXCLUDED.endpoints),
       m AS (
         INSERT INTO instance_minutes (owner, minute, health, timeline)
         SELECT $1, * FROM unnest($6::bigint[], $7::text[], $8::text[])
         ON CONFLICT (owner, minute) DO UPDATE SET health = EXCLUDED.health, timeline = EXCLUDED.timeline)
       ${WATCHERS}`,
  read: `SELECT v.owner, v.updated_at, v.endpoints,
         coalesce((SELECT json_agg(json_build_array(m.minute, m.health, m.timeline) ORDER BY m.minute)
           FROM instance_minutes m WHERE m.owner = v.owner AND m.minute >= $3), '[]'::json) AS minutes
       FROM instance_views v WHERE v.owner <> $1 AND v.updated_at >= $2 AND v.format = $4
       ORDER BY v.owner`,
  prune: `WITH v AS (DELETE FROM instance_views WHERE updated_at < $1 RETURNING 1),
         m AS (DELETE FROM instance_minutes WHERE minute < $2)
       SELECT count(*)::int AS removed FROM v`,
  announce: `WITH v AS (
         INSERT INTO instance_views (owner, format, updated_at, watching_until, endpoints) VALUES ($1, 0, $2, $3, '[]')
         ON CONFLICT (owner) DO UPDATE SET watching_until = EXCLUDED.watching_until)
       SELECT pg_notify($4, $5)`,
  relay: 'SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p',
} as const;

/** Endpoint states (`PostgresEndpointStore`). */
export const ENDPOINTS = {
  list: `SELECT ${ENDPOINT_COLUMNS} FROM endpoint_states`,
  insertNew: `INSERT INTO endpoint_states (source, url_key, url) SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING`,
  lockStates: `SELECT ${ENDPOINT_COLUMNS} FROM endpoint_states WHERE (source, url_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
         ORDER BY source, url_key FOR UPDATE`,
  update: `UPDATE endpoint_states e SET url = x.url, failures = x.failures, failing_since = x.failing_since, last_failure_at = x.last_failure_at,
           last_error = x.last_error, disabled_at = x.disabled_at, disabled_reason = x.disabled_reason
         FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::bigint[], $7::text[], $8::bigint[], $9::text[])
           AS x(source, url_key, url, failures, failing_since, last_failure_at, last_error, disabled_at, disabled_reason)
         WHERE e.source = x.source AND e.url_key = x.url_key`,
  enable: `WITH old AS (SELECT ${ENDPOINT_COLUMNS} FROM endpoint_states WHERE source = $1 AND url_key = $2 AND disabled_at IS NOT NULL FOR UPDATE)
       UPDATE endpoint_states e SET failures = 0, failing_since = NULL, disabled_at = NULL, disabled_reason = NULL
       FROM old WHERE e.source = old.source AND e.url_key = old.url_key
       RETURNING ${ENDPOINT_COLUMNS.split(', ').map((c) => `old.${c}`).join(', ')}`,
} as const;

/** The delivery log (`PostgresDeliveryLog`): its lines and their attempts. */
export const LOG = {
  insertLines: `WITH i AS (
         INSERT INTO log_messages (source, kind, message_id, type, user_id, received_at, state, attempts, updated_at, finished_at, reason, body, attempt_log, source_id,
           event, responses)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::int[], $9::bigint[], $10::bigint[],
           $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[])
         RETURNING id, state)
       SELECT id FROM i WHERE state IN ('pending', 'retrying')`,
  updateStates: `UPDATE log_messages l SET attempts = l.attempts + x.n,
         state = CASE WHEN ${NEWER} THEN x.state ELSE l.state END,
         updated_at = CASE WHEN ${NEWER} THEN x.updated_at ELSE l.updated_at END,
         finished_at = CASE WHEN ${NEWER} THEN x.finished_at ELSE l.finished_at END,
         reason = CASE WHEN ${NEWER} THEN x.reason ELSE l.reason END,
         body = CASE WHEN $9::boolean AND x.state = 'delivered' AND ${NEWER} THEN NULL ELSE l.body END,
         attempt_log = concat_ws(',', l.attempt_log, '[' || l.series || ',' || x.entries || ']'),
         responses = CASE WHEN $9::boolean AND x.state = 'delivered' AND ${NEWER} THEN NULL
           ELSE concat_ws(',', l.responses, '[' || l.series || ',' || x.responses || ']') END
       FROM unnest($1::bigint[], $2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[], $8::text[])
         AS x(id, n, state, updated_at, finished_at, reason, entries, responses)
       WHERE l.id = x.id`,
  replay: `WITH old AS (
         SELECT id, state, updated_at, finished_at, reason FROM log_messages
         WHERE id = ANY($2::bigint[]) AND state IN ('failed', 'delivered') AND body IS NOT NULL FOR UPDATE)
       UPDATE log_messages l SET series = l.series + 1, state = 'pending', finished_at = NULL, updated_at = $1, reason = NULL
       FROM old WHERE l.id = old.id AND l.state IN ('failed', 'delivered')
       RETURNING l.id, l.series, l.source, l.message_id, old.state, old.updated_at, old.finished_at, old.reason`,
  abandon: `UPDATE log_messages SET state = 'failed', finished_at = $1, updated_at = $1, reason = $2
       WHERE source = $3 AND state IN ('pending', 'retrying') AND ($4::text IS NULL OR source_id IS NULL OR source_id = $4)`,
  unreplay: `UPDATE log_messages l SET series = l.series - 1, state = x.state, updated_at = x.updated_at, finished_at = x.finished_at, reason = x.reason
       FROM unnest($1::bigint[], $2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::text[]) AS x(id, series, state, updated_at, finished_at, reason)
       WHERE l.id = x.id AND l.series = x.series AND l.state = 'pending'
       RETURNING l.source, l.message_id`,
  get: `SELECT ${LOG_COLUMNS}, body, attempt_log, responses FROM log_messages WHERE id = $1`,
  attempts: 'SELECT series, attempt, at, url, status, error, duration_ms, outcome, next_attempt_at FROM log_attempts WHERE delivery_id = $1 ORDER BY id',
  failed: `SELECT ${LOG_COLUMNS}, body, attempt_log, responses FROM log_messages WHERE source = $1 AND state = 'failed' AND body IS NOT NULL AND received_at >= $2 AND received_at < $3
       AND ($4::text IS NULL OR source_id IS NULL OR source_id = $4) ORDER BY id`,
  pruneIds: `SELECT id FROM log_messages WHERE received_at < $1 AND finished_at < $1 LIMIT ${PRUNE_CHUNK}`,
  pruneAttempts: 'DELETE FROM log_attempts WHERE delivery_id = ANY($1::bigint[])',
  pruneMessages: 'DELETE FROM log_messages WHERE id = ANY($1::bigint[])',
  eraseDelivered: `UPDATE log_messages SET body = NULL, responses = NULL WHERE received_at < $1 AND finished_at < $1 AND state = 'delivered' AND body IS NOT NULL`,
} as const;

/** Shared rate budgets (`PostgresRateBudget`). */
export const RATE = {
  claim: `WITH now AS (SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS t)
       INSERT INTO rate_budgets AS r (key, tat, asked_at, first_slot, granted)
       SELECT $1, t + g * $3::float8, t, t, g FROM now, LATERAL (SELECT least($2::int, floor($4::float8 / $3::float8)::int + 1) AS g) x
       ON CONFLICT (key) DO UPDATE SET
         asked_at = EXCLUDED.asked_at,
         first_slot = greatest(r.tat, EXCLUDED.asked_at),
         granted = CASE WHEN greatest(r.tat, EXCLUDED.asked_at) > EXCLUDED.asked_at + $4::float8 THEN 0
           ELSE least($2::int, floor((EXCLUDED.asked_at + $4::float8 - greatest(r.tat, EXCLUDED.asked_at)) / $3::float8)::int + 1) END,
         tat = greatest(r.tat, EXCLUDED.asked_at) + $3::float8 * CASE WHEN greatest(r.tat, EXCLUDED.asked_at) > EXCLUDED.asked_at + $4::float8 THEN 0
           ELSE least($2::int, floor((EXCLUDED.asked_at + $4::float8 - greatest(r.tat, EXCLUDED.asked_at)) / $3::float8)::int + 1) END
       RETURNING first_slot - asked_at AS delay, granted`,
} as const;

/** The registry of sources (`PostgresSetup`): sources, write keys and the setup revision. */
export const SETUP = {
  read: `SELECT (SELECT revision FROM setup_revision WHERE id = 1) AS revision,
         coalesce((SELECT json_agg(s ORDER BY s.name) FROM sources s), '[]'::json) AS sources,
         coalesce((SELECT json_agg(k ORDER BY k.source, k.created_at, k.id) FROM source_keys k), '[]'::json) AS keys`,
  revision: 'SELECT revision FROM setup_revision WHERE id = 1',
  lockRevision: 'SELECT revision FROM setup_revision WHERE id = 1 FOR UPDATE',
  bump: 'UPDATE setup_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision',
  notify: 'SELECT pg_notify($1, $2)',
  insertSource: 'INSERT INTO sources (name, id, enabled, webhooks, applied, settings, created_at, updated_at, schema) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING',
  deleteSource: 'DELETE FROM sources WHERE name = $1',
  deleteKeys: 'DELETE FROM source_keys WHERE source = $1',
  deleteMembers: 'DELETE FROM audience_members WHERE source = $1',
  deleteAudiences: 'DELETE FROM audiences WHERE source = $1',
  // `n`: the calls given up, which count failed; a batch delivery is none (its members are).
  failDeliveries: `WITH f AS (
             UPDATE deliveries SET status = ${ABANDONED}, finished_at = $1, last_error = $2, leased_until = 0, lease_owner = NULL
             WHERE source = $3 AND status = ${PENDING} RETURNING kind)
           SELECT (count(*) FILTER (WHERE kind <> 'batch'))::int AS n FROM f`,
  addFailed: "INSERT INTO counters (name, shard, value) VALUES ('failed', 0, $1) ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value",
  keyByDigest: 'SELECT id, source FROM source_keys WHERE digest = $1',
  reviveKey: 'UPDATE source_keys SET expires_at = NULL, origin = $2 WHERE id = $1',
  insertKey: 'INSERT INTO source_keys (id, source, digest, last4, origin, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
  expireKeys: `UPDATE source_keys SET expires_at = $2
           WHERE source = $1 AND NOT (id = ANY($3::text[])) AND ($4::text IS NULL OR origin = $4) AND (expires_at IS NULL OR expires_at > $2)`,
} as const;

/** What sources send and their usage per day (`PostgresUsageStore`). */
export const USAGE = {
  trackedNames: "SELECT source_id, event FROM source_events WHERE type = 'track' AND (source_id, event) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
  namesKept: "SELECT source_id, count(*)::int AS n FROM source_events WHERE source_id = ANY($1::text[]) AND type = 'track' AND event <> '' GROUP BY source_id",
  events: 'SELECT source_id, source, type, event, count, first_seen, last_seen FROM source_events WHERE source_id = $1',
  days: 'SELECT source_id, source, day, received, filtered, rejected, delivered, failed FROM source_usage WHERE source_id = ANY($1::text[]) AND day BETWEEN $2 AND $3 ORDER BY day',
  pruneEvents: 'DELETE FROM source_events e WHERE NOT EXISTS (SELECT 1 FROM sources s WHERE s.id = e.source_id)',
  pruneDays: 'DELETE FROM source_usage u WHERE u.day < $1 OR NOT EXISTS (SELECT 1 FROM sources s WHERE s.id = u.source_id)',
} as const;
/** What `prune` removes, a chunk at a time, in this order. */
export const PRUNE = [
  // A batch delivery's links go with it; the count is of deliveries.
  `WITH p AS (SELECT id, kind FROM deliveries WHERE status <> ${PENDING} AND finished_at < $1 LIMIT ${PRUNE_CHUNK}),
     l AS (DELETE FROM batch_members WHERE batch_id IN (SELECT id FROM p WHERE kind = 'batch'))
   DELETE FROM deliveries WHERE id IN (SELECT id FROM p)`,
  `DELETE FROM messages WHERE (source, message_id) IN (SELECT source, message_id FROM messages WHERE received_at < $1 LIMIT ${PRUNE_CHUNK})`,
  // Write keys whose grace ended before the retention window: refused long since, forgotten now.
  'DELETE FROM source_keys WHERE expires_at IS NOT NULL AND expires_at < $1',
] as const;

/** A page of the delivery log: the lines that match every condition of `where`, newest first; `limit` is the number of the LIMIT parameter. */
export function listLogLines(where: readonly string[], limit: number): string {
  return `SELECT ${LOG_COLUMNS} FROM log_messages ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT $${limit}`;
}

/** A source's update: `sets` are the columns it changes (`name = $n`); `$1` is its name. */
export function updateSource(sets: readonly string[]): string {
  return `UPDATE sources SET ${sets.join(', ')} WHERE name = $1`;
}

/** The LISTEN connection's change: listen to `listen`, stop on `unlisten` (names checked by the listener), as one query. */
export function listenChanges(listen: readonly string[], unlisten: readonly string[]): string {
  return [...listen.map((c) => `LISTEN ${c}`), ...unlisten.map((c) => `UNLISTEN ${c}`)].join('; ');
}
