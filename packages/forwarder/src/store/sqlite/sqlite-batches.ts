import type BetterSqlite3 from 'better-sqlite3';
import type { BatchMember, BatchRecordResult, BatchStore, DeliveryOutcome, FinishedMember, LeaseRequest, MemberLease, NewBatch, PendingDelivery } from '../contract';
import { ABANDONED, PENDING } from '../statuses';
import { BATCHES, QUEUE } from './sql';
import { leasedBatch, toMember } from '../sql-rows';
import type { MemberRow } from '../sql-rows';

/** Thrown inside the seal's transaction to roll it back: a member's lease no longer holds. */
const LEASE_LOST = new Error('a member\'s lease no longer holds');

/**
 * The queue's batches in the SQLite database (contract/batches.ts): a batch delivery is a row of
 * `deliveries` of kind `batch`, claimed like any other; `batch_members` links it to the calls it
 * holds. Each method is one transaction; outcomes are written without an fsync of their own, as
 * `record`'s are (a lost one means a batch is sent again).
 */
export class SqliteBatches implements BatchStore {
  private readonly statements;
  private readonly sealTx: (members: readonly MemberLease[], batches: readonly NewBatch[], now: number, lease: LeaseRequest) => PendingDelivery[];
  private readonly splitTx: (batch: MemberLease, parts: readonly NewBatch[], now: number, lease: LeaseRequest) => PendingDelivery[] | null;
  private readonly recordTx: (outcomes: readonly DeliveryOutcome[]) => BatchRecordResult;

  constructor(
    db: BetterSqlite3.Database,
    /** Throws when the store is closed; sets the durability of the write that follows. */
    private readonly guard: () => void,
    /** Called when delivered bodies were erased: the WAL's frames that held them go soon. */
    private readonly scrubSoon: () => void,
  ) {
    this.statements = {
      leaseOf: db.prepare(BATCHES.leaseOf).pluck(),
      insert: db.prepare(BATCHES.insert),
      link: db.prepare(BATCHES.link),
      park: db.prepare(BATCHES.park),
      members: db.prepare(BATCHES.members),
      linked: db.prepare(BATCHES.linked).pluck(),
      held: db.prepare(BATCHES.held),
      remove: db.prepare(BATCHES.remove),
      retry: db.prepare(BATCHES.retry),
      delivered: db.prepare(BATCHES.delivered),
      deliveredAbandoned: db.prepare(BATCHES.deliveredAbandoned),
      failed: db.prepare(BATCHES.failed),
      deliverMembers: db.prepare(BATCHES.deliverMembers),
      failMembers: db.prepare(BATCHES.failMembers),
      keyPending: db.prepare(QUEUE.keyPending).pluck(),
      addCounter: db.prepare(QUEUE.addCounter),
    };
    this.sealTx = db.transaction(this.sealAll.bind(this));
    this.splitTx = db.transaction(this.splitOne.bind(this));
    this.recordTx = db.transaction(this.recordAll.bind(this));
  }

  async seal(members: readonly MemberLease[], batches: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[] | null> {
    this.guard();
    try {
      return this.sealTx(members, batches, now, lease);
    } catch (error) {
      if (error === LEASE_LOST) return null;
      throw error;
    }
  }

  async members(batchId: number): Promise<BatchMember[]> {
    this.guard();
    return (this.statements.members.all(batchId) as MemberRow[]).map(toMember);
  }

  async recordBatches(outcomes: readonly DeliveryOutcome[]): Promise<BatchRecordResult> {
    this.guard();
    if (outcomes.length === 0) return { recorded: 0, stale: [], released: [], members: [] };
    return this.recordTx(outcomes);
  }

  async split(batch: MemberLease, parts: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[] | null> {
    this.guard();
    return this.splitTx(batch, parts, now, lease);
  }

  /**
   * The seal's transaction: a member in a batch is parked only under the lease it was claimed
   * with, and one that is not is checked; the first that no longer holds rolls everything back
   * (LEASE_LOST).
   */
  private sealAll(members: readonly MemberLease[], batches: readonly NewBatch[], now: number, lease: LeaseRequest): PendingDelivery[] {
    const s = this.statements;
    const parked = new Set<number>();
    for (const b of batches) for (const id of b.members) parked.add(id);
    for (const m of members) {
      const holds = parked.has(m.id) ? s.park.run(m.id, m.lease).changes > 0 : s.leaseOf.get(m.id) === m.lease;
      if (!holds) throw LEASE_LOST;
    }
    return this.insertAll(batches, now, lease, new Set(members.map((m) => m.id)));
  }

  /** Stores batch deliveries, leased, with their links; `known`: the ids a batch may hold. */
  private insertAll(batches: readonly NewBatch[], now: number, lease: LeaseRequest, known: ReadonlySet<number>): PendingDelivery[] {
    const s = this.statements;
    const until = now + lease.ms;
    return batches.map((b) => {
      const id = Number(s.insert.run(b.source, b.destination, b.messageId, b.body, now, until, lease.owner).lastInsertRowid);
      b.members.forEach((member, position) => {
        if (!known.has(member)) throw new TypeError(`Batch member ${member} is not one of the calls the batch was made for`);
        s.link.run(id, member, position);
      });
      return leasedBatch(b, id, now, until);
    });
  }

  /** The split's transaction: the batch (while its lease holds) replaced by its parts; the members stay parked. */
  private splitOne(batch: MemberLease, parts: readonly NewBatch[], now: number, lease: LeaseRequest): PendingDelivery[] | null {
    const s = this.statements;
    if (s.held.get(batch.id, batch.lease) === undefined) return null;
    const known = new Set(s.linked.all(batch.id) as number[]);
    // The parts first: a row id is max(id) + 1, and the batch's must not be given again (an
    // outcome of its lease would land on a part).
    const stored = this.insertAll(parts, now, lease, known);
    s.remove.run(batch.id);
    return stored;
  }

  /** The outcomes' transaction (see BatchStore#recordBatches). */
  private recordAll(outcomes: readonly DeliveryOutcome[]): BatchRecordResult {
    const s = this.statements;
    let recorded = 0;
    let delivered = 0;
    let failed = 0;
    /** Members delivered after all, having been counted failed by their source's deletion. */
    let revived = 0;
    const stale: number[] = [];
    const released: string[] = [];
    const ended: FinishedMember[] = [];
    /** Whether a delivered body (a batch's, its members') was erased: the WAL still holds it. */
    let erased = false;
    const end = (rows: readonly MemberRow[], status: FinishedMember['status'], batchId: number): void => {
      for (const row of rows.slice().sort((a, b) => a.id - b.id)) ended.push({ ...toMember(row), status, batchId });
      // After the whole statement: members of one key ended together release nothing among themselves.
      for (const row of rows) if (row.order_key !== null && s.keyPending.get(row.source, row.order_key) !== undefined) released.push(row.source);
    };
    for (const o of outcomes) {
      if (o.status === 'retry') {
        const changes = s.retry.run(o.attempts, o.firstAttemptAt ?? null, o.nextAttemptAt, o.error ?? null, o.id, o.lease).changes;
        if (changes === 0) stale.push(o.id);
        recorded += changes;
        continue;
      }
      if (o.status === 'delivered') {
        let from = PENDING;
        if (s.delivered.run(o.attempts, o.firstAttemptAt, o.at, o.id).changes === 0) {
          if (s.deliveredAbandoned.run(o.attempts, o.firstAttemptAt, o.at, o.id, o.lease).changes === 0) {
            stale.push(o.id);
            continue;
          }
          from = ABANDONED;
        }
        recorded++;
        erased = true;
        const rows = s.deliverMembers.all(o.attempts, o.firstAttemptAt, o.at, from, o.id) as MemberRow[];
        delivered += rows.length;
        if (from === ABANDONED) revived += rows.length;
        end(rows, 'delivered', o.id);
        continue;
      }
      if (s.failed.run(o.attempts, o.firstAttemptAt ?? null, o.at, o.reason, o.id, o.lease).changes === 0) {
        stale.push(o.id);
        continue;
      }
      recorded++;
      const rows = s.failMembers.all(o.attempts, o.firstAttemptAt ?? null, o.at, o.reason, o.id) as MemberRow[];
      failed += rows.length;
      end(rows, 'failed', o.id);
    }
    if (delivered > 0) s.addCounter.run(delivered, 'delivered');
    if (failed - revived !== 0) s.addCounter.run(failed - revived, 'failed');
    if (erased) this.scrubSoon();
    return { recorded, stale, released, members: ended };
  }
}
