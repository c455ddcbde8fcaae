import { randomUUID } from 'node:crypto';
import createDebug from 'debug';
import type { Clock, TimerHandle } from 'eventrelay/internal';
import { batchEntry, batchOf, batchText, batchTexts, planBatches, splitBatch } from '../batch-body';
import type { Batch, BatchSettings } from '../batch-body';
import type { AttemptState, UrlOutcome } from '../delivery/destination';
import type { DeliveryTarget, DeliveryTargets } from '../delivery/target';
import type { BatchMember, ForwarderStore, LeaseRequest, MemberLease, NewBatch, PendingDelivery } from '../store/contract';
import type { Recording } from './recording';
import { reportOf } from './report';

const log = createDebug('eventrelay:forwarder');

/** What the batching step asks of the loop: start the batch deliveries it stored, and run again when it has room. */
export interface BatchLoop {
  /** Starts attempts of batch deliveries leased to this instance. */
  launch(batches: readonly PendingDelivery[], now: number): void;
  /** Room was made (a batch closed): run the loop. */
  kick(): void;
  /** A batch could not be stored: told to the operator (its calls are claimed again once their leases end). */
  failed(error: Error): void;
}

/** A claimed call waiting in its source's open batch: its parts per URL, known once its transforms ran. */
interface Held {
  readonly delivery: PendingDelivery;
  /** The open batch it is in (it moves to the next when one closes before its parts are known). */
  open: Open;
  /** Its text per URL position; undefined while its parts are being made. */
  texts: (string | undefined)[] | undefined;
  /** Transforms that failed for it (final for their URLs), told with its outcome. */
  failed: readonly UrlOutcome[];
}

/** A source's open batch: its calls in the order claimed, and the timer that closes it. */
interface Open {
  readonly target: DeliveryTarget;
  readonly settings: readonly (BatchSettings | undefined)[];
  readonly held: Held[];
  /** Per URL with `batch`: calls and body bytes so far, to close the batch once one of them is full. */
  readonly counts: number[];
  readonly bytes: number[];
  timer: TimerHandle | undefined;
  /** Closed: its calls were sealed (or moved on); a late timer or a full URL does nothing more. */
  closed: boolean;
  /** The parts being made, in claim order: a batch closes once they are all known. */
  made: Promise<void>;
}

/**
 * The batching step of a batch's path (issue 45, docs/batched-delivery.md), for a source with a URL
 * whose `batch` is set: its claimed calls are not attempted one by one. They wait here, in the
 * order claimed, in the source's open batch, until one of its URLs' batches is full or the first
 * call waited `maxWaitMs` (at most half the lease); then every URL's body is made of them (a URL
 * with `batch` gets arrays of at most `maxEvents` calls and `maxBytes` bytes; a URL without gets
 * each call alone) and stored as batch deliveries in one transaction that parks the calls
 * (`BatchStore#seal`). Those deliveries are attempted, retried and recorded like any other, with
 * exactly their stored bytes; a 413 splits one in halves (`split`).
 */
export class Batching {
  private readonly open = new Map<string, Open>();
  /** Calls held here, by delivery id: not claimed or started again while they wait. */
  private readonly ids = new Map<number, Held>();
  /** The batches being stored, one after another. */
  private storing: Promise<void> = Promise.resolve();
  /** Per source, calls in batches being stored (`seal`). */
  private readonly sealing = new Map<string, number>();

  constructor(
    private readonly store: ForwarderStore,
    private readonly targets: DeliveryTargets,
    private readonly clock: Clock,
    private readonly lease: LeaseRequest,
    private readonly recording: Recording,
    private readonly loop: BatchLoop,
  ) {}

  /** Resolves once the batches closed so far are stored (and started, or given back). */
  settled(): Promise<void> {
    return this.storing;
  }

  /** Whether `id` waits here in an open batch. */
  has(id: number): boolean {
    return this.ids.has(id);
  }

  /** Calls of `source` held here: in its open batch, or in batches being stored. */
  held(source: string): number {
    return (this.open.get(source)?.held.length ?? 0) + (this.sealing.get(source) ?? 0);
  }

  /**
   * For a source whose destination batches: how many more claimed calls it takes now (up to
   * twice the largest `maxEvents` of its URLs, counting those in batches being stored: one batch
   * fills while the one before is stored); undefined for a source that does not batch.
   */
  room(source: string): number | undefined {
    const settings = this.targets.get(source)?.batches;
    if (settings === undefined) return undefined;
    let most = 1;
    for (const s of settings) if (s !== undefined && s.maxEvents > most) most = s.maxEvents;
    return Math.max(0, 2 * most - this.held(source));
  }

  /** Whether calls of `delivery`'s kind and source go through this step (messages of a source that batches). */
  takes(delivery: PendingDelivery, target: DeliveryTarget | undefined): boolean {
    return delivery.kind === 'message' && target?.batches !== undefined && target.parts !== undefined;
  }

  /** A claimed call of a source that batches: it joins the source's open batch. */
  add(delivery: PendingDelivery, target: DeliveryTarget, now: number): void {
    const source = delivery.source;
    let open = this.open.get(source);
    if (open === undefined || open.target !== target) {
      // A new destination (settings changed): the batch open for the old one closes first.
      if (open !== undefined) this.close(source, open);
      open = this.opened(source, target, Promise.resolve());
    }
    const held: Held = { delivery, open, texts: undefined, failed: [] };
    open.held.push(held);
    this.ids.set(delivery.id, held);
    const state: AttemptState = { attempt: delivery.attempts + 1, firstAttemptAt: delivery.firstAttemptAt ?? now, id: delivery.messageId };
    // Parts in claim order: each waits for the one before, so a batch closes on a known prefix.
    open.made = open.made.then(async () => {
      const parts = await target.parts!(delivery.body, state);
      // Handed back meanwhile (stopping, its source deleted): not ours now.
      if (this.ids.get(delivery.id) !== held) return;
      // The batch it is in now: the one it joined, or the next, if that closed before its parts were known.
      const at = held.open;
      if ('result' in parts) {
        // It goes to no URL (filtered, every transform failed, every URL disabled): recorded at once.
        this.release(at, held);
        this.recording.add(delivery, state, parts.result, reportOf(delivery, parts.result));
        return;
      }
      const texts: (string | undefined)[] = at.settings.map(() => undefined);
      let full = false;
      for (const part of parts.parts) {
        texts[part.index] = part.text;
        const s = at.settings[part.index];
        if (s === undefined) continue;
        at.counts[part.index]! += 1;
        at.bytes[part.index]! += Buffer.byteLength(part.text, 'utf8') + 1;
        if (at.counts[part.index]! >= s.maxEvents || at.bytes[part.index]! >= s.maxBytes) full = true;
      }
      held.texts = texts;
      held.failed = parts.failed;
      if (full) this.close(source, at);
    });
  }

  /** A new open batch for `source`, closed by its timer (`maxWaitMs`, within half the lease) if not full first. */
  private opened(source: string, target: DeliveryTarget, made: Promise<void>): Open {
    const settings = target.batches!;
    const none = settings.map(() => 0);
    const open: Open = { target, settings, held: [], counts: none, bytes: none.map(() => 2), timer: undefined, closed: false, made };
    this.open.set(source, open);
    let wait = Infinity;
    for (const s of settings) if (s !== undefined && s.maxWaitMs < wait) wait = s.maxWaitMs;
    // Within the lease: the calls are sealed before another instance may claim them.
    wait = Math.min(wait === Infinity ? 0 : wait, Math.floor(this.lease.ms / 2));
    open.timer = this.clock.setTimeout(() => {
      open.timer = undefined;
      void open.made.then(() => this.close(source, open));
    }, wait);
    return open;
  }

  /** A call leaves its open batch without being sealed. */
  private release(open: Open, held: Held): void {
    const at = open.held.indexOf(held);
    if (at >= 0) open.held.splice(at, 1);
    if (this.ids.get(held.delivery.id) === held) this.ids.delete(held.delivery.id);
  }

  /**
   * Closes `open`: the calls whose parts are known are sealed into batch deliveries, in one
   * transaction, and those are started. The rest (parts still being made: claimed after the call
   * that filled it) open the source's next batch, first in it, in their order.
   */
  private close(source: string, open: Open): void {
    if (open.closed) return;
    open.closed = true;
    if (this.open.get(source) === open) this.open.delete(source);
    if (open.timer !== undefined) this.clock.clearTimeout(open.timer);
    open.timer = undefined;
    const held = open.held.splice(0);
    const ready = held.filter((h) => h.texts !== undefined);
    const later = held.filter((h) => h.texts === undefined);
    if (later.length > 0) {
      // Ahead of any call claimed from now on: the next batch waits for their parts.
      const next = this.opened(source, open.target, open.made);
      for (const h of later) {
        h.open = next;
        next.held.push(h);
      }
    }
    if (ready.length === 0) return;
    const batches = this.plan(source, open.settings, ready);
    const members: MemberLease[] = ready.map((h) => ({ id: h.delivery.id, lease: h.delivery.lease }));
    const now = this.clock.now();
    this.sealing.set(source, (this.sealing.get(source) ?? 0) + ready.length);
    // Stored one after another, in the order the batches closed, beside the outcomes being written.
    this.storing = this.storing.then(async () => {
      let stored: PendingDelivery[] | null = null;
      try {
        stored = await this.store.batches.seal(members, batches, now, this.lease);
        if (stored === null) log('source %s: a batch of %d calls was not stored: a lease ended first; they are claimed again', source, members.length);
      } catch (error) {
        // Still leased: claimed again once the leases end, never lost.
        const message = error instanceof Error ? error.message : String(error);
        log('source %s: could not store a batch of %d calls: %s', source, members.length, message);
        this.loop.failed(new Error(`source ${source}: could not store a batch of ${members.length} calls (they are sent once their leases end): ${message}`));
      }
      for (const h of ready) if (this.ids.get(h.delivery.id) === h) this.ids.delete(h.delivery.id);
      const left = (this.sealing.get(source) ?? 0) - ready.length;
      if (left > 0) this.sealing.set(source, left);
      else this.sealing.delete(source);
      if (stored !== null) {
        const calls = new Map(ready.map((h) => [h.delivery.id, memberOf(h.delivery)]));
        this.recording.storedBatches(stored, calls, batches.map((b) => b.members));
        // A transform that failed for a call is final for its URL: told now, as an attempt of the call.
        for (const h of ready) if (h.failed.length > 0) this.recording.tellTransformFailures(h.delivery, h.failed, now);
        this.loop.launch(stored, this.clock.now());
      }
      this.loop.kick();
    });
  }

  /** The bodies of the calls `ready`, per URL, in claim order. */
  private plan(source: string, settings: readonly (BatchSettings | undefined)[], ready: readonly Held[]): NewBatch[] {
    const batches: NewBatch[] = [];
    settings.forEach((s, index) => {
      const destination = `Webhooks#${index}`;
      if (s === undefined) {
        // A URL without `batch` gets each call alone, as it would have: its body, its messageId.
        for (const h of ready) {
          const text = h.texts![index];
          if (text !== undefined) batches.push({ source, destination, messageId: h.delivery.messageId, body: text, members: [h.delivery.id] });
        }
        return;
      }
      const entries = [];
      for (const h of ready) {
        const text = h.texts![index];
        if (text !== undefined) entries.push(batchEntry(h.delivery.id, text));
      }
      for (const batch of planBatches(entries, s)) {
        batches.push({ source, destination, messageId: `batch_${randomUUID()}`, body: batchText(batch), members: batch.entries.map((e) => e.id) });
      }
    });
    return batches;
  }

  /**
   * A batch delivery answered 413: stored again as its two halves (same calls, same order), which
   * are started. Resolves false when it cannot be split (one call; the lease ended): it is then
   * recorded as the retry it is.
   */
  async split(batch: PendingDelivery, now: number): Promise<boolean> {
    const texts = batchTexts(batch.body);
    if (texts === undefined || texts.length < 2) return false;
    const members = await this.store.batches.members(batch.id);
    if (members.length !== texts.length) return false;
    const halves = splitBatch(batchOf(texts.map((text, i) => batchEntry(members[i]!.id, text))))!;
    const half = (part: Batch<number>): NewBatch => ({
      source: batch.source,
      destination: batch.destination,
      messageId: `batch_${randomUUID()}`,
      body: batchText(part),
      members: part.entries.map((e) => e.id),
    });
    const parts = await this.store.batches.split({ id: batch.id, lease: batch.lease }, halves.map(half), now, this.lease);
    if (parts === null) return false;
    log('batch %d of source %s answered 413: sent again as %d and %d calls', batch.id, batch.source, halves[0].entries.length, halves[1].entries.length);
    this.loop.launch(parts, this.clock.now());
    return true;
  }

  /** The calls held for `source` (deleted), or for every source (stopping): back to the store. */
  drop(source?: string): PendingDelivery[] {
    const dropped: PendingDelivery[] = [];
    for (const [name, open] of this.open) {
      if (source !== undefined && name !== source) continue;
      if (open.timer !== undefined) this.clock.clearTimeout(open.timer);
      open.timer = undefined;
      open.closed = true;
      this.open.delete(name);
      for (const h of open.held) {
        this.ids.delete(h.delivery.id);
        dropped.push(h.delivery);
      }
      open.held.length = 0;
    }
    return dropped;
  }
}

/** A call as a batch holds it. */
function memberOf(d: PendingDelivery): BatchMember {
  return { id: d.id, source: d.source, messageId: d.messageId, orderKey: d.orderKey, createdAt: d.createdAt, pending: true };
}
