import type BetterSqlite3 from 'better-sqlite3';
import createDebug from 'debug';
import { applyAttempt, FINAL_STATES } from '../delivery-log';
import { BufferedDeliveryLog } from '../buffered-log';
import type { LogOp } from '../buffered-log';
import { attemptEntries, responseEntries, toDeliveryDetail, toLoggedMessage } from '../sql-rows';
import type { AttemptRow, LogRow } from '../sql-rows';
import { LOG, LOG_TABLES, listLogLines, PRUNE_CHUNK } from './sql';
import type { AttemptRecord, DeliveryDetail, DeliveryLog, DeliveryLogOptions, DeliveryState, LogCall, LoggedMessage, MessageQuery, ReplayedLine } from '../contract';

const log = createDebug('eventrelay:forwarder');

/**
 * Attempts made on calls that the same flush writes (a call is accepted, then attempted within
 * the 50 ms its line waits): each call's attempts, in order, and the set of those records.
 */
function foldAttempts(ops: readonly LogOp[]): { byCall: Map<LogCall, AttemptRecord[]>; records: Set<AttemptRecord> } {
  const open = new Map<string, LogCall>();
  const byCall = new Map<LogCall, AttemptRecord[]>();
  const records = new Set<AttemptRecord>();
  for (const op of ops) {
    if (op.op === 'calls') {
      for (const call of op.calls) if (call.state === 'pending') open.set(`${call.source}\u0000${call.messageId}`, call);
      continue;
    }
    const call = open.get(`${op.record.source}\u0000${op.record.messageId}`);
    if (call === undefined) continue;
    let list = byCall.get(call);
    if (list === undefined) byCall.set(call, (list = []));
    list.push(op.record);
    records.add(op.record);
  }
  return { byCall, records };
}

/**
 * The delivery log in the SQLite store's database (its own `log_*` tables, the same handle).
 * Writes are buffered and committed together every 50 ms without an fsync of their own: the log
 * is for looking, and a power cut may cost its last lines, never a message.
 */
export class SqliteDeliveryLog extends BufferedDeliveryLog implements DeliveryLog {
  private readonly statements;
  private readonly apply: (ops: readonly LogOp[]) => void;
  /** Log ids of calls that may still get attempts, by source and messageId: saves a lookup per attempt. */
  private readonly live = new Map<string, { id: number; series: number }>();

  /** True when the flush being applied erased a delivered body. */
  private erased = false;

  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly options: DeliveryLogOptions,
    /** Called after a commit that erased delivered bodies (the store then scrubs its WAL). */
    private readonly afterErase: () => void = () => {},
    /**
     * Makes the next commit skip its fsync (`PRAGMA synchronous = NORMAL`) through the store that
     * owns the handle, which keeps the mode it set and sets it again before each of its own
     * commits. Without it (a log on a handle of its own) each flush reads, sets and restores the
     * pragma: three statements prepared per flush.
     */
    private readonly relaxed?: () => void,
  ) {
    super();
    db.exec(LOG_TABLES.schema);
    // A log made by an earlier release gains the columns added since, each when it lacks it.
    const columns = db.prepare(LOG_TABLES.columns).pluck();
    for (const { table, column, add } of LOG_TABLES.added) if (!(columns.all(table) as string[]).includes(column)) db.exec(add);
    db.exec(LOG_TABLES.dropEventIndex);
    this.statements = {
      insert: db.prepare(LOG.insert),
      // A call with the attempts made on it before the flush that writes it: in its state after them.
      insertAttempted: db.prepare(LOG.insertAttempted),
      findLive: db.prepare(LOG.findLive),
      // One statement per attempt: the new state follows from the outcome alone; the attempt joins
      // the line's, and so do the receivers' answers to it (erased with the body).
      // A finished line changes only to delivered: a failed one whose source was deleted while
      // the attempt was in flight (attempts on other finished lines are not written: stale in the queue).
      update: db.prepare(LOG.update),
      replay: db.prepare(LOG.replay),
      unreplay: db.prepare(LOG.unreplay),
      get: db.prepare(LOG.get),
      attempts: db.prepare(LOG.attempts),
      failed: db.prepare(LOG.failed),
      pruneIds: db.prepare(LOG.pruneIds).pluck(),
      pruneMessages: db.prepare(LOG.pruneMessages),
      pruneAttempts: db.prepare(LOG.pruneAttempts),
      eraseDelivered: db.prepare(LOG.eraseDelivered),
    };
    this.apply = db.transaction((ops: readonly LogOp[]) => {
      const folded = foldAttempts(ops);
      for (const op of ops) {
        if (op.op === 'calls') this.insertCalls(op.calls, folded.byCall);
        else if (!folded.records.has(op.record)) this.applyAttempt(op.record);
      }
    });
  }

  /** Commits the buffered writes; a failure is logged and the lines are dropped (the queue is not affected). */
  flush(): void {
    const ops = this.take();
    if (ops.length === 0 || this.closed) return;
    // The queue's own commits choose their durability; the log's never pay for an fsync.
    if (this.relaxed !== undefined) {
      this.commit(ops, this.relaxed);
      return;
    }
    const previous = this.db.pragma('synchronous', { simple: true }) as number;
    try {
      if (previous !== 1) this.db.pragma('synchronous = NORMAL');
      this.commit(ops);
    } catch (error) {
      this.lost(ops, error);
    } finally {
      if (previous !== 1) this.db.pragma(`synchronous = ${previous}`);
    }
  }

  private commit(ops: readonly LogOp[], before?: () => void): void {
    try {
      before?.();
      this.erased = false;
      this.apply(ops);
      if (this.erased) this.afterErase();
    } catch (error) {
      this.lost(ops, error);
    }
  }

  private lost(ops: readonly LogOp[], error: unknown): void {
    this.live.clear();
    log('delivery log: could not write %d entries: %s', ops.length, (error as Error).message);
  }

  private insertCalls(calls: readonly LogCall[], attemptsOf: ReadonlyMap<LogCall, readonly AttemptRecord[]>): void {
    for (const call of calls) {
      const attempts = attemptsOf.get(call);
      if (attempts !== undefined) {
        this.insertAttempted(call, attempts);
        continue;
      }
      const id = this.insert(call);
      if (call.state === 'pending') this.live.set(`${call.source}\u0000${call.messageId}`, { id, series: 1 });
    }
  }

  /**
   * A call whose attempts came in the same flush: one row in its state after them (a delivered
   * body never written when it is not kept), and their attempts; no update.
   */
  private insertAttempted(call: LogCall, attempts: readonly AttemptRecord[]): void {
    const line: { state: DeliveryState; attempts: number; updatedAt: number; finishedAt: number | null; reason: string | null } = {
      state: call.state,
      attempts: 0,
      updatedAt: call.receivedAt,
      finishedAt: null,
      reason: null,
    };
    for (const record of attempts) applyAttempt(line, record);
    const keepBody = !(line.state === 'delivered' && this.options.keepDelivered === 0);
    const answers = keepBody ? responseEntries(attempts) : null;
    const { lastInsertRowid } = this.statements.insertAttempted.run(
      call.source,
      call.kind,
      call.messageId,
      call.type ?? null,
      call.userId ?? null,
      call.receivedAt,
      line.state,
      line.attempts,
      line.updatedAt,
      line.finishedAt,
      line.reason,
      keepBody ? (call.body ?? null) : null,
      `[1,${attemptEntries(attempts)}]`,
      call.sourceId ?? null,
      call.event ?? null,
      answers === null ? null : `[1,${answers}]`,
    );
    const id = Number(lastInsertRowid);
    if (!FINAL_STATES.has(line.state)) this.live.set(`${call.source}\u0000${call.messageId}`, { id, series: 1 });
  }

  private applyAttempt(record: AttemptRecord): void {
    const s = this.statements;
    const key = `${record.source}\u0000${record.messageId}`;
    const found = this.live.get(key) ?? (s.findLive.get(record.source, record.messageId) as { id: number; series: number } | undefined);
    if (found === undefined) return;
    const next = { state: 'pending' as DeliveryState, attempts: 0, updatedAt: 0, finishedAt: null as number | null, reason: null as string | null };
    applyAttempt(next, record);
    const erase = next.state === 'delivered' && this.options.keepDelivered === 0 ? 1 : 0;
    const entries = `[${found.series},${attemptEntries([record])}]`;
    const answers = erase === 1 ? null : responseEntries([record]);
    const responses = answers === null ? null : `[${found.series},${answers}]`;
    const { state, updatedAt, finishedAt, reason } = next;
    if (s.update.run({ state, updatedAt, finishedAt, reason, erase, entries, id: found.id, responses }).changes === 0) return;
    if (erase === 1) this.erased = true;
    if (FINAL_STATES.has(next.state)) this.live.delete(key);
  }

  private insert(call: LogCall): number {
    const pending = call.state === 'pending';
    const result = this.statements.insert.run(
      call.source,
      call.kind,
      call.messageId,
      call.type ?? null,
      call.userId ?? null,
      call.receivedAt,
      call.state,
      call.receivedAt,
      pending ? null : call.receivedAt,
      call.reason ?? null,
      pending ? (call.body ?? null) : null,
      call.sourceId ?? null,
      call.event ?? null,
    );
    return Number(result.lastInsertRowid);
  }

  async list(query: MessageQuery): Promise<LoggedMessage[]> {
    await this.drain();
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown) => {
      where.push(clause);
      params.push(value);
    };
    if (query.source !== undefined) add('source = ?', query.source);
    if (query.state !== undefined) add('state = ?', query.state);
    if (query.type !== undefined) add('type = ?', query.type);
    if (query.event !== undefined) add('event = ?', query.event);
    if (query.messageId !== undefined) add('message_id = ?', query.messageId);
    if (query.userId !== undefined) add('user_id = ?', query.userId);
    if (query.since !== undefined) add('received_at >= ?', query.since);
    if (query.until !== undefined) add('received_at < ?', query.until);
    if (query.beforeId !== undefined) add('id < ?', query.beforeId);
    const rows = this.db.prepare(listLogLines(where)).all(...params, query.limit) as LogRow[];
    return rows.map(toLoggedMessage);
  }

  async get(id: number): Promise<DeliveryDetail | undefined> {
    await this.drain();
    const row = this.statements.get.get(id) as LogRow | undefined;
    if (row === undefined) return undefined;
    return this.detail(row);
  }

  private detail(row: LogRow): DeliveryDetail {
    const attempts = this.statements.attempts.all(row.id) as AttemptRow[];
    return toDeliveryDetail(row, attempts);
  }

  async failed(source: string, since: number, until: number, sourceId?: string): Promise<DeliveryDetail[]> {
    await this.drain();
    const id = sourceId ?? null;
    return (this.statements.failed.all(source, since, until, id, id) as LogRow[]).map((row) => this.detail(row));
  }

  async replay(ids: readonly number[], at: number): Promise<ReplayedLine[]> {
    await this.drain();
    return this.db.transaction(() => {
      const changed: ReplayedLine[] = [];
      for (const id of ids) {
        const row = this.statements.get.get(id) as LogRow | undefined;
        if (row === undefined) continue;
        const replayed = this.statements.replay.get(at, id) as { series: number; source: string; message_id: string } | undefined;
        if (replayed === undefined) continue;
        this.live.set(`${replayed.source}\u0000${replayed.message_id}`, { id, series: replayed.series });
        changed.push({ id, series: replayed.series, before: { state: row.state, updatedAt: row.updated_at, finishedAt: row.finished_at, reason: row.reason } });
      }
      return changed;
    })();
  }

  async unreplay(lines: readonly ReplayedLine[]): Promise<void> {
    this.db.transaction(() => {
      for (const { id, series, before } of lines) {
        if (this.statements.unreplay.run(before.state, before.updatedAt, before.finishedAt, before.reason, id, series).changes > 0) {
          const row = this.statements.get.get(id) as LogRow;
          this.live.delete(`${row.source}\u0000${row.message_id}`);
        }
      }
    })();
  }

  async abandon(source: string, at: number, reason: string, sourceId?: string): Promise<void> {
    await this.drain();
    const id = sourceId ?? null;
    // The lines stay reachable by key: an attempt in flight at the deletion may yet deliver one.
    this.db.prepare(LOG.abandon).run(at, at, reason, source, id, id);
  }

  async prune(before: number, now: number): Promise<number> {
    await this.drain();
    let removed = 0;
    const s = this.statements;
    // A call and its attempts go together, a chunk at a time, letting requests in between.
    for (;;) {
      if (this.closed) return removed;
      const ids = s.pruneIds.all(before) as number[];
      if (ids.length === 0) break;
      const list = JSON.stringify(ids);
      this.db.transaction(() => {
        removed += s.pruneAttempts.run(list).changes;
        removed += s.pruneMessages.run(list).changes;
      })();
      if (ids.length < PRUNE_CHUNK) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    for (;;) {
      if (this.closed) return removed;
      if (s.eraseDelivered.run(now - this.options.keepDelivered).changes < PRUNE_CHUNK) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return removed;
  }

  async close(): Promise<void> {
    this.flush();
    this.closed = true;
  }
}
