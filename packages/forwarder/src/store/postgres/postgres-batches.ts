import type { Pool, PoolClient } from 'pg';
import type { BatchMember, BatchRecordResult, BatchStore, DeliveryOutcome, FinishedMember, LeaseRequest, MemberLease, NewBatch, PendingDelivery } from '../contract';
import { ABANDONED, DELIVERED, FAILED, PENDING } from '../statuses';
import { checkout, numberArray, shard, textArray } from './pg-driver';
import { BATCHES } from './sql';
import { leasedBatch, toMember } from '../sql-rows';
import type { MemberRow } from '../sql-rows';

/** A batch row as `BATCHES.lock` read it: what its outcomes are decided on. */
interface BatchState {
  status: number;
  readonly lease: number;
}

/**
 * The queue's batches on PostgreSQL (contract/batches.ts), safe with several instances on one
 * database: each method is one transaction that locks the rows it decides on (members, batch
 * rows) in id order before it writes, on the connections of claims and outcomes (no WAL flush
 * waited for: a lost seal or outcome means a batch or its calls are sent again).
 */
export class PostgresBatches implements BatchStore {
  constructor(
    private readonly pool: Pool,
    /** Throws when the store is closed. */
    private readonly assertOpen: () => void,
  ) {}

  async seal(members: readonly MemberLease[], batches: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[] | null> {
    this.assertOpen();
    checkMembers(batches, new Set(members.map((m) => m.id)));
    const { rows } = await this.pool.query<{ held: boolean; ids: string[] }>({
      name: 'eventrelay-batches-seal',
      text: BATCHES.seal,
      values: [numberArray(members.map((m) => m.id)), numberArray(members.map((m) => m.lease)), ...batchArrays(batches, now, lease)],
    });
    const { held, ids } = rows[0]!;
    if (!held) return null;
    const until = now + lease.ms;
    return batches.map((b, i) => leasedBatch(b, Number(ids[i]), now, until));
  }

  async members(batchId: number): Promise<BatchMember[]> {
    this.assertOpen();
    const { rows } = await this.pool.query<MemberRow>(BATCHES.members, [batchId]);
    return rows.map(toMember);
  }

  async split(batch: MemberLease, parts: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[] | null> {
    this.assertOpen();
    return this.transaction(async (client) => {
      const linked = await client.query<{ delivery_id: number }>(BATCHES.linked, [batch.id]);
      const removed = await client.query(BATCHES.remove, [batch.id, batch.lease]);
      if (removed.rows.length === 0) return null;
      checkMembers(parts, new Set(linked.rows.map((r) => Number(r.delivery_id))));
      // The members stay parked, as they are.
      return this.insert(client, parts, now, lease);
    });
  }

  async recordBatches(outcomes: readonly DeliveryOutcome[]): Promise<BatchRecordResult> {
    this.assertOpen();
    if (outcomes.length === 0) return { recorded: 0, stale: [], released: [], members: [] };
    return this.transaction(async (client) => {
      const ids = [...new Set(outcomes.map((o) => o.id))].sort((a, b) => a - b);
      const locked = await client.query<{ id: number | null; status: number; lease: number }>({ name: 'eventrelay-batches-lock', text: BATCHES.lock, values: [numberArray(ids)] });
      const states = new Map<number, BatchState>();
      for (const r of locked.rows) if (r.id !== null) states.set(Number(r.id), { status: Number(r.status), lease: r.lease });
      const plan = planOutcomes(outcomes, states);
      const ended: FinishedMember[] = [];
      const { delivered, failed } = plan;
      const row = shard();
      if (plan.written.size > 0) {
        const w = [...plan.written.values()];
        const { rows } = await client.query<MemberRow & { batch_id: number }>({
          name: 'eventrelay-batches-end',
          text: BATCHES.end,
          values: [
            numberArray(w.map((o) => o.id)),
            numberArray(w.map((o) => (o.status === 'retry' ? PENDING : o.status === 'delivered' ? DELIVERED : FAILED))),
            numberArray(w.map((o) => o.attempts)),
            numberArray(w.map((o) => o.firstAttemptAt ?? null)),
            numberArray(w.map((o) => (o.status === 'retry' ? o.nextAttemptAt : o.at))),
            textArray(w.map((o) => (o.status === 'retry' ? (o.error ?? null) : o.status === 'failed' ? o.reason : null))),
            numberArray(delivered.map((e) => e.outcome.id)),
            numberArray(delivered.map((e) => e.from)),
            numberArray(delivered.map((e) => e.outcome.attempts)),
            numberArray(delivered.map((e) => e.outcome.firstAttemptAt ?? null)),
            numberArray(delivered.map((e) => e.outcome.at)),
            row,
          ],
        });
        for (const r of rows) ended.push({ ...toMember(r), status: 'delivered', batchId: Number(r.batch_id) });
      }
      if (failed.length > 0) {
        // A statement of its own, after the batches' update and the members' locks: it sees the
        // batches this flush ended and those other instances ended meanwhile.
        const { rows } = await client.query<MemberRow & { batch_id: number }>({
          name: 'eventrelay-batches-fail',
          text: BATCHES.failMembers,
          values: [
            numberArray(failed.map((e) => e.outcome.id)),
            numberArray(failed.map((e) => e.outcome.attempts)),
            numberArray(failed.map((e) => e.outcome.firstAttemptAt ?? null)),
            numberArray(failed.map((e) => e.outcome.at)),
            textArray(failed.map((e) => (e.outcome.status === 'failed' ? e.outcome.reason : null))),
            row,
          ],
        });
        for (const r of rows) ended.push({ ...toMember(r), status: 'failed', batchId: Number(r.batch_id) });
      }
      ended.sort((a, b) => a.id - b.id);
      return { recorded: plan.recorded, stale: plan.stale, released: await released(client, ended), members: ended };
    });
  }

  /** Stores a split's parts with their links (BATCHES.insert). */
  private async insert(client: PoolClient, batches: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[]> {
    const { rows } = await client.query<{ id: number }>({ name: 'eventrelay-batches-insert', text: BATCHES.insert, values: batchArrays(batches, now, lease) });
    const until = now + lease.ms;
    return batches.map((b, i) => leasedBatch(b, Number(rows[i]!.id), now, until));
  }

  /** Runs `work` in a transaction on a connection of its own; a null answer rolls it back. */
  private async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await checkout(this.pool);
    try {
      await client.query('BEGIN');
      let result: T;
      try {
        result = await work(client);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
      await client.query(result === null ? 'ROLLBACK' : 'COMMIT');
      return result;
    } finally {
      client.release();
    }
  }
}

/** The parameters that store `batches` (BATCHES.seal's `$3`-`$12`, BATCHES.insert's): their rows, leased from `now`, and their links. */
function batchArrays(batches: readonly NewBatch[], now: number, lease: LeaseRequest): (string | number)[] {
  const place: number[] = [];
  const member: number[] = [];
  const position: number[] = [];
  batches.forEach((b, i) => {
    b.members.forEach((id, p) => {
      place.push(i + 1);
      member.push(id);
      position.push(p);
    });
  });
  return [
    textArray(batches.map((b) => b.source)),
    textArray(batches.map((b) => b.destination)),
    textArray(batches.map((b) => b.messageId)),
    textArray(batches.map((b) => b.body)),
    now,
    now + lease.ms,
    lease.owner,
    numberArray(place),
    numberArray(member),
    numberArray(position),
  ];
}

/** Refuses a batch holding a call it was not made for (a caller's mistake: nothing is stored). */
function checkMembers(batches: readonly NewBatch[], known: ReadonlySet<number>): void {
  for (const b of batches) {
    for (const id of b.members) if (!known.has(id)) throw new TypeError(`Batch member ${id} is not one of the calls the batch was made for`);
  }
}

/** An ended batch: the outcome, and the status its members end from (PENDING, or ABANDONED for a revived batch). */
interface Ended {
  readonly outcome: Extract<DeliveryOutcome, { status: 'delivered' | 'failed' }>;
  readonly from: number;
}

interface OutcomePlan {
  recorded: number;
  readonly stale: number[];
  /** The outcome to write per batch row (the last written, should one come twice). */
  readonly written: Map<number, DeliveryOutcome>;
  readonly delivered: Ended[];
  readonly failed: Ended[];
}

/** Decides the outcomes on the locked batch rows, as `record` does for other rows (see RecordResult). */
function planOutcomes(outcomes: readonly DeliveryOutcome[], states: ReadonlyMap<number, BatchState>): OutcomePlan {
  const plan: OutcomePlan = { recorded: 0, stale: [], written: new Map(), delivered: [], failed: [] };
  for (const o of outcomes) {
    const state = states.get(o.id);
    const holds = state !== undefined && state.lease === o.lease;
    let from: number | undefined;
    if (state?.status === PENDING && (holds || o.status === 'delivered')) from = PENDING;
    else if (state?.status === ABANDONED && holds && o.status === 'delivered') from = ABANDONED;
    if (from === undefined) {
      plan.stale.push(o.id);
      continue;
    }
    plan.recorded++;
    plan.written.set(o.id, o);
    if (o.status === 'retry') continue;
    state!.status = o.status === 'delivered' ? DELIVERED : FAILED;
    (o.status === 'delivered' ? plan.delivered : plan.failed).push({ outcome: o, from });
  }
  return plan;
}

/** The source of each ended ordered member with another of its key pending (RecordResult.released). */
async function released(client: PoolClient, ended: readonly FinishedMember[]): Promise<string[]> {
  const ordered = ended.filter((m) => m.orderKey !== undefined);
  if (ordered.length === 0) return [];
  const { rows } = await client.query<{ source: string; next: boolean }>({
    name: 'eventrelay-batches-next',
    text: BATCHES.nextOfKey,
    values: [textArray(ordered.map((m) => m.source)), textArray(ordered.map((m) => m.orderKey!))],
  });
  return rows.filter((r) => r.next).map((r) => r.source);
}
