import { checkout, numberArray, pgText, storedKey, textArray } from './pg-driver';
import type { Pool, PoolClient } from 'pg';
import createDebug from 'debug';
import { applyAttempt, FINAL_STATES } from '../delivery-log';
import { BufferedDeliveryLog, HOLD_MS } from '../buffered-log';
import type { LogOp } from '../buffered-log';
import { LOCK_CLASS, LOCKS } from './postgres-schema';
import { attemptEntries, responseEntries, toDeliveryDetail, toLoggedMessage } from '../sql-rows';
import type { AttemptRow, LogRow } from '../sql-rows';
import type { AttemptRecord, DeliveryDetail, DeliveryLog, DeliveryLogOptions, DeliveryState, LogCall, LoggedMessage, MessageQuery, ReplayedLine } from '../contract';
import { FIND_LIVE, listLogLines, LOCK, LOG, PRUNE_CHUNK } from './sql';

const log = createDebug('eventrelay:forwarder');

/**
 * How long an attempt waits for its line, in ms: another instance accepted the call and has not
 * written it yet (its writes wait up to 50 ms for others, then take a round trip or two). A
 * minute covers a database or a machine that stalls for seconds; a waiting attempt only costs a
 * lookup per flush.
 */
const ORPHAN_WAIT = 60_000;

/**
 * Most attempts waiting for their line at once, by default; past it the oldest are not logged. A
 * peer whose log is off or failing would otherwise make every attempt on its calls wait.
 */
const WAITING_ATTEMPTS = 10_000;

/** Open lines remembered per instance by default (a cache: a line not remembered is looked up). */
const OPEN_LINES = 50_000;

const UNTRIED: LineState = { state: 'pending', attempts: 0, updatedAt: 0, finishedAt: null, reason: null };

/** A line to insert: a call, in its state after the attempts made on it before it was written. */
interface Line {
  readonly call: LogCall;
  readonly attempts: readonly AttemptRecord[];
  readonly state: DeliveryState;
  readonly updatedAt: number;
  readonly finishedAt: number | null;
  readonly reason: string | null;
  readonly body: string | null;
}

type LineState = Parameters<typeof applyAttempt>[0];

/** A line's state after `attempts`, in order, from `start` (the last attempt decides; `attempts` counts them). */
function stateAfter(start: LineState, attempts: readonly AttemptRecord[]): LineState {
  const entry = { ...start };
  for (const record of attempts) applyAttempt(entry, record);
  return entry;
}

function lineOf(call: LogCall, attempts: readonly AttemptRecord[], eraseDelivered: boolean): Line {
  const pending = call.state === 'pending';
  const start = { state: call.state, attempts: 0, updatedAt: call.receivedAt, finishedAt: pending ? null : call.receivedAt, reason: call.reason ?? null };
  const { state, updatedAt, finishedAt, reason } = stateAfter(start, attempts);
  const body = pending && !(eraseDelivered && state === 'delivered') ? (call.body ?? null) : null;
  return { call, attempts, state, updatedAt, finishedAt, reason, body };
}

/**
 * A flush's writes as two statements: the attempts on lines written before it, in order, then
 * its calls. An attempt on a call of the same flush joins its call, which is then inserted once,
 * in its state after them: most calls are delivered within the 50 ms a flush waits, so most lines
 * are inserted finished (without a body to erase) and never updated. Putting the other attempts
 * first keeps the log's order: none of them is on a call of this flush that came before it.
 */
function splitOps(ops: readonly LogOp[], eraseDelivered: boolean): { attempts: AttemptRecord[]; lines: Line[] } {
  const open = new Map<string, { call: LogCall; attempts: AttemptRecord[] }>();
  const calls: { call: LogCall; attempts: AttemptRecord[] }[] = [];
  const attempts: AttemptRecord[] = [];
  for (const op of ops) {
    if (op.op === 'attempt') {
      const fresh = open.get(`${op.record.source}\u0000${op.record.messageId}`);
      if (fresh === undefined) attempts.push(op.record);
      else fresh.attempts.push(op.record);
      continue;
    }
    for (const call of op.calls) {
      const entry = { call, attempts: [] };
      calls.push(entry);
      if (call.state === 'pending') open.set(`${call.source}\u0000${call.messageId}`, entry);
    }
  }
  // Lists crossing into other functions are built by push: Array#map's result has another
  // elements kind once its caller is optimized, which sent the readers back to the interpreter.
  const lines: Line[] = [];
  for (const c of calls) lines.push(lineOf(c.call, c.attempts, eraseDelivered));
  return { attempts, lines };
}

/**
 * The insert's parameters, a column each, in one loop: a function TurboFan compiles small, where
 * a `map` and a closure per column made one of the forwarder's largest compile jobs, done again
 * at each deoptimization.
 */
function lineValues(lines: readonly Line[]): string[] {
  const n = lines.length;
  const source = new Array<string>(n);
  const kind = new Array<string>(n);
  const messageId = new Array<string>(n);
  const type = new Array<string | null>(n);
  const userId = new Array<string | null>(n);
  const receivedAt = new Array<number>(n);
  const state = new Array<string>(n);
  const attempts = new Array<number>(n);
  const updatedAt = new Array<number>(n);
  const finishedAt = new Array<number | null>(n);
  const reason = new Array<string | null>(n);
  const body = new Array<string | null>(n);
  const attemptLog = new Array<string | null>(n);
  const sourceId = new Array<string | null>(n);
  const event = new Array<string | null>(n);
  const responses = new Array<string | null>(n);
  for (let i = 0; i < n; i++) {
    const l = lines[i]!;
    const c = l.call;
    source[i] = c.source;
    kind[i] = c.kind;
    messageId[i] = c.messageId;
    type[i] = c.type ?? null;
    userId[i] = c.userId ?? null;
    receivedAt[i] = c.receivedAt;
    state[i] = l.state;
    attempts[i] = l.attempts.length;
    updatedAt[i] = l.updatedAt;
    finishedAt[i] = l.finishedAt;
    reason[i] = l.reason;
    body[i] = l.body;
    // A new line is in its first series.
    attemptLog[i] = l.attempts.length === 0 ? null : `[1,${attemptEntries(l.attempts)}]`;
    sourceId[i] = c.sourceId ?? null;
    event[i] = c.event ?? null;
    // The answers go with the body: none kept for a line inserted without it.
    const answers = l.body === null || l.attempts.length === 0 ? null : responseEntries(l.attempts);
    responses[i] = answers === null ? null : `[1,${answers}]`;
  }
  return [
    textArray(source),
    textArray(kind),
    textArray(messageId),
    textArray(type),
    textArray(userId),
    numberArray(receivedAt),
    textArray(state),
    numberArray(attempts),
    numberArray(updatedAt),
    numberArray(finishedAt),
    textArray(reason),
    textArray(body),
    textArray(attemptLog),
    textArray(sourceId),
    textArray(event),
    textArray(responses),
  ];
}

/**
 * The attempt update's parameters for lines `ids`, each with its attempts here in order: the
 * line's state after them (the previous state does not matter: the last attempt decides) and
 * their `attempt_log` entries.
 */
function stateValues(ids: readonly number[], attemptsOf: readonly (readonly AttemptRecord[])[], eraseDelivered: boolean): string[] {
  const n = ids.length;
  const count = new Array<number>(n);
  const state = new Array<string>(n);
  const updatedAt = new Array<number>(n);
  const finishedAt = new Array<number | null>(n);
  const reason = new Array<string | null>(n);
  const entries = new Array<string>(n);
  const responses = new Array<string | null>(n);
  for (let i = 0; i < n; i++) {
    const records = attemptsOf[i]!;
    const after = stateAfter(UNTRIED, records);
    count[i] = records.length;
    state[i] = after.state;
    updatedAt[i] = after.updatedAt;
    finishedAt[i] = after.finishedAt;
    reason[i] = after.reason;
    entries[i] = attemptEntries(records);
    // A line delivered now whose body is not kept loses its answers too: none to write.
    responses[i] = eraseDelivered && after.state === 'delivered' ? null : responseEntries(records);
  }
  return [
    numberArray(ids),
    numberArray(count),
    textArray(state),
    numberArray(updatedAt),
    numberArray(finishedAt),
    textArray(reason),
    textArray(entries),
    textArray(responses),
  ];
}

/**
 * The delivery log on PostgreSQL, beside the shared queue: every instance writes its calls and
 * attempts there, so any instance's admin API sees them all. Writes are buffered and committed
 * together every 50 ms, a pending call's line once its first attempt came (up to HOLD_MS); a
 * crash may cost the last lines of the log, never a message.
 */
export class PostgresDeliveryLog extends BufferedDeliveryLog implements DeliveryLog {
  private flushing: Promise<void> = Promise.resolve();
  /**
   * The line id of calls this instance saw open, by key, oldest first, at most `openLimit`: lines
   * another instance finishes are never seen finished here, so the oldest are forgotten.
   */
  private readonly live = new Map<string, number>();
  private readonly openLimit: number;
  private readonly waitingLimit: number;
  private readonly waitMs: number;
  /** Attempts whose line was not in the table yet, with when that was first seen; tried again on each flush. */
  private orphans: { record: AttemptRecord; since: number }[] = [];

  /**
   * A log on the store's database: its tables come with the store's schema (`PostgresStore.open`
   * migrates them). `pool`: the store's `logConnections`.
   */
  constructor(
    private readonly pool: Pool,
    private readonly options: DeliveryLogOptions,
    internals: { readonly openLines?: number; readonly waitingAttempts?: number; readonly waitMs?: number; readonly holdMs?: number } = {},
  ) {
    // A line written with its attempts saves PostgreSQL an update per line (see HOLD_MS).
    super(internals.holdMs ?? HOLD_MS);
    this.openLimit = internals.openLines ?? OPEN_LINES;
    this.waitingLimit = internals.waitingAttempts ?? WAITING_ATTEMPTS;
    this.waitMs = internals.waitMs ?? ORPHAN_WAIT;
  }

  /** Attempts waiting for a line another instance has not written yet. */
  get waitingAttempts(): number {
    return this.orphans.length;
  }

  /** How many open lines this instance remembers now. */
  get openLines(): number {
    return this.live.size;
  }

  private remember(key: string, id: number): void {
    this.live.delete(key);
    this.live.set(key, id);
    if (this.live.size > this.openLimit) this.live.delete(this.live.keys().next().value!);
  }

  /** Commits the buffered writes (after any flush in progress); failures are logged, never thrown. */
  flush(): Promise<void> {
    const taken = this.take();
    this.flushing = this.flushing.then(async () => {
      // Attempts still waiting for their line go first: they happened before anything taken now.
      const waiting = this.orphans;
      this.orphans = [];
      const since = new Map<AttemptRecord, number>();
      const ops: LogOp[] = [];
      for (const o of waiting) {
        since.set(o.record, o.since);
        ops.push({ op: 'attempt', record: o.record });
      }
      for (const op of taken) ops.push(op);
      if (ops.length === 0) return;
      const { attempts, lines } = splitOps(ops, this.options.keepDelivered === 0);
      let client: PoolClient | undefined;
      let failure: Error | undefined;
      // A connection that breaks between two queries reports here, not as an uncaught 'error'.
      const onError = (error: Error) => (failure ??= error);
      // One statement commits alone; two share a transaction, so that a flush is written whole or not at all.
      const both = attempts.length > 0 && lines.length > 0;
      try {
        client = await checkout(this.pool);
        client.on('error', onError);
        if (both) await client.query('BEGIN');
        if (attempts.length > 0) await this.writeAttempts(client, attempts, since);
        if (lines.length > 0) await this.writeCalls(client, lines);
        if (both) await client.query('COMMIT');
      } catch (error) {
        failure ??= error as Error;
        if (both) await client?.query('ROLLBACK').catch(() => {});
        this.live.clear();
        this.orphans = [];
        log('delivery log: could not write %d entries: %s', ops.length, failure.message);
      } finally {
        client?.off('error', onError);
        // A broken connection is dropped, not handed to the next user.
        client?.release(failure);
      }
      if (this.orphans.length > this.waitingLimit) {
        const dropped = this.orphans.splice(0, this.orphans.length - this.waitingLimit);
        log('delivery log: %d attempts waited for lines that never came; the oldest are not logged', dropped.length);
      }
      if (this.orphans.length > 0) this.flushSoon();
    });
    return this.flushing;
  }

  /** The latest live log line of each key not known here, in one query. */
  private async findLive(client: PoolClient, keys: Iterable<{ source: string; messageId: string }>): Promise<Map<string, number>> {
    const sources: string[] = [];
    const ids: string[] = [];
    for (const k of keys) {
      sources.push(k.source);
      ids.push(k.messageId);
    }
    const found = new Map<string, number>();
    if (sources.length === 0) return found;
    const { rows } = await client.query<{ id: number; source: string; message_id: string }>({
      name: 'eventrelay-log-find',
      text: FIND_LIVE,
      values: [textArray(sources), textArray(ids)],
    });
    for (const row of rows) found.set(storedKey(row.source, row.message_id), row.id);
    return found;
  }

  /**
   * Lines in one statement, with the attempts made on them before this flush in `attempt_log`.
   * Only open lines' ids come back: later attempts go to them.
   */
  private async writeCalls(client: PoolClient, lines: readonly Line[]): Promise<void> {
    const { rows } = await client.query<{ id: number }>({
      name: 'eventrelay-log-lines',
      text: LOG.insertLines,
      values: lineValues(lines),
    });
    // Ids are taken in the order the rows were given; the newest open line of a key gets its later attempts.
    rows.sort((a, b) => a.id - b.id);
    let next = 0;
    for (const line of lines) {
      if (FINAL_STATES.has(line.state)) continue;
      const id = rows[next++]!.id;
      const key = storedKey(line.call.source, line.call.messageId);
      if ((this.live.get(key) ?? 0) < id) this.remember(key, id);
    }
  }

  /**
   * Attempts in order, one statement: each line's new state and its attempts appended to its
   * `attempt_log`, in the series the line is in when the update lands (another instance may have
   * replayed it since this one saw it). An attempt whose line is not there yet (another instance
   * accepted the call and has not written it) waits for a later flush, up to `waitMs` (a
   * minute); `since` says when a waiting one first missed.
   */
  private async writeAttempts(client: PoolClient, records: readonly AttemptRecord[], since: ReadonlyMap<AttemptRecord, number>): Promise<void> {
    const keys: string[] = [];
    const unknown = new Map<string, { source: string; messageId: string }>();
    for (const r of records) {
      const key = storedKey(r.source, r.messageId);
      keys.push(key);
      if (!this.live.has(key)) unknown.set(key, r);
    }
    const stored = await this.findLive(client, unknown.values());
    // Each line's attempts here, in order.
    const byLine = new Map<number, { key: string; records: AttemptRecord[] }>();
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      const key = keys[i]!;
      const found = this.live.get(key) ?? stored.get(key);
      if (found === undefined) {
        const first = since.get(record) ?? Date.now();
        if (Date.now() - first < this.waitMs) this.orphans.push({ record, since: first });
        else log('delivery log: no line for attempt %d of %s after %d ms; not logged', record.attempt, record.messageId, this.waitMs);
        continue;
      }
      const line = byLine.get(found);
      if (line === undefined) byLine.set(found, { key, records: [record] });
      else line.records.push(record);
    }
    if (byLine.size === 0) return;
    const ids: number[] = [];
    for (const id of byLine.keys()) ids.push(id);
    ids.sort((a, b) => a - b);
    const attemptsOf: AttemptRecord[][] = [];
    for (const id of ids) attemptsOf.push(byLine.get(id)!.records);
    // The last attempt decides: a line delivered or failed gets no more.
    for (const { key, records: attempts } of byLine.values()) if (attempts.at(-1)!.outcome !== 'retry') this.live.delete(key);
    // Only columns no index covers change, so PostgreSQL can update each line in place (HOT).
    await client.query({
      name: 'eventrelay-log-states',
      text: LOG.updateStates,
      values: [...stateValues(ids, attemptsOf, this.options.keepDelivered === 0), this.options.keepDelivered === 0],
    });
  }

  async replay(ids: readonly number[], at: number): Promise<ReplayedLine[]> {
    await this.drain();
    if (ids.length === 0) return [];
    // One statement: a line another instance replays at the same moment is locked by the first
    // update, and no longer matches for the second once it commits.
    const { rows } = await this.pool.query<{
      id: number;
      series: number;
      source: string;
      message_id: string;
      state: DeliveryState;
      updated_at: number;
      finished_at: number | null;
      reason: string | null;
    }>(
      LOG.replay,
      [at, numberArray(ids)],
    );
    return rows.map((row) => {
      this.remember(storedKey(row.source, row.message_id), row.id);
      return { id: row.id, series: row.series, before: { state: row.state, updatedAt: row.updated_at, finishedAt: row.finished_at, reason: row.reason } };
    });
  }

  async abandon(source: string, at: number, reason: string, sourceId?: string): Promise<void> {
    await this.drain();
    // The lines stay remembered: an attempt in flight at the deletion may yet deliver one.
    await this.pool.query(
      LOG.abandon,
      [at, reason, source, sourceId ?? null],
    );
  }

  async unreplay(lines: readonly ReplayedLine[]): Promise<void> {
    if (lines.length === 0) return;
    const { rows } = await this.pool.query<{ source: string; message_id: string }>(
      LOG.unreplay,
      [
        numberArray(lines.map((l) => l.id)),
        numberArray(lines.map((l) => l.series)),
        textArray(lines.map((l) => l.before.state)),
        numberArray(lines.map((l) => l.before.updatedAt)),
        numberArray(lines.map((l) => l.before.finishedAt)),
        textArray(lines.map((l) => l.before.reason)),
      ],
    );
    for (const row of rows) this.live.delete(storedKey(row.source, row.message_id));
  }

  async list(query: MessageQuery): Promise<LoggedMessage[]> {
    await this.drain();
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (column: string, op: string, value: unknown) => {
      params.push(typeof value === 'string' ? pgText(value) : value);
      where.push(`${column} ${op} $${params.length}`);
    };
    if (query.source !== undefined) add('source', '=', query.source);
    if (query.state !== undefined) add('state', '=', query.state);
    if (query.type !== undefined) add('type', '=', query.type);
    if (query.event !== undefined) add('event', '=', query.event);
    if (query.messageId !== undefined) add('message_id', '=', query.messageId);
    if (query.userId !== undefined) add('user_id', '=', query.userId);
    if (query.since !== undefined) add('received_at', '>=', query.since);
    if (query.until !== undefined) add('received_at', '<', query.until);
    if (query.beforeId !== undefined) add('id', '<', query.beforeId);
    params.push(query.limit);
    const { rows } = await this.pool.query<LogRow>(
      listLogLines(where, params.length),
      params,
    );
    return rows.map(toLoggedMessage);
  }

  async get(id: number): Promise<DeliveryDetail | undefined> {
    await this.drain();
    const { rows } = await this.pool.query<LogRow>(LOG.get, [id]);
    return rows[0] === undefined ? undefined : this.detail(rows[0]);
  }

  private async detail(row: LogRow): Promise<DeliveryDetail> {
    const { rows } = await this.pool.query<AttemptRow>(
      LOG.attempts,
      [row.id],
    );
    return toDeliveryDetail(row, rows);
  }

  async failed(source: string, since: number, until: number, sourceId?: string): Promise<DeliveryDetail[]> {
    await this.drain();
    const { rows } = await this.pool.query<LogRow>(
      LOG.failed,
      [source, since, until, sourceId ?? null],
    );
    return Promise.all(rows.map((row) => this.detail(row)));
  }

  /** One pruner at a time over all instances (an advisory lock); the others return 0 at once. */
  async prune(before: number, now: number): Promise<number> {
    await this.drain();
    const client = await checkout(this.pool);
    try {
      const locked = await client.query<{ ok: boolean }>(LOCK.tryLock, [LOCK_CLASS, LOCKS.logPrune]);
      if (!locked.rows[0]!.ok) return 0;
      try {
        let removed = 0;
        for (;;) {
          if (this.closed) return removed;
          // received_at <= finished_at: its index (never updated) finds the candidates.
          const { rows } = await client.query<{ id: number }>(LOG.pruneIds, [
            before,
          ]);
          if (rows.length === 0) break;
          const ids = rows.map((r) => r.id);
          removed += (await client.query(LOG.pruneAttempts, [ids])).rowCount ?? 0;
          removed += (await client.query(LOG.pruneMessages, [ids])).rowCount ?? 0;
          if (rows.length < PRUNE_CHUNK) break;
        }
        await client.query(LOG.eraseDelivered, [
          now - this.options.keepDelivered,
        ]);
        return removed;
      } finally {
        await client.query(LOCK.unlock, [LOCK_CLASS, LOCKS.logPrune]);
      }
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }
}
