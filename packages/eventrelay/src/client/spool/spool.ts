import createDebug from 'debug';
import type { Clock, TimerHandle } from '../../clock';
import { ConfigError, SpoolError, type EventRelayError } from '../../errors';
import { crc32, encodeAcks, encodeMessages, messageRecordBytes, scanRecords, type Checksum } from './format';
import { errno, nodeRuntime, readBytes, type SpoolRuntime } from './fs';
import { createLock, identity, lockName, newOwnerId, ownersInThisProcess, segmentName } from './owner';
import { takeOver, type Claimed } from './recovery';
import { Segment } from './segment';
import type { ResolvedSpoolOptions } from './options';

const log = createDebug('analytics');

const PENDING = 0;
const WRITTEN = 1;
const DONE = 2;

/** One accepted message in the spool: waiting for the turn's write, written, or done with. */
export interface SpoolRecord {
  readonly json: string;
  readonly bytes: number;
  /** When the call was accepted, ms since the epoch. */
  readonly time: number;
  state: typeof PENDING | typeof WRITTEN | typeof DONE;
  segment: Segment | undefined;
  offset: number;
  /** Handed out by the recovery of a segment taken over, and not yet released. */
  recovering: boolean;
}

/**
 * What became of a record's message: `delivered` (answered 2xx, or refused for good as too large)
 * removes it from the spool; `retry` (retries ran out on an error that may pass) keeps it and sends
 * it again, without a callback, after this client's next delivered batch; `keep` (a final refusal,
 * or the client closing) keeps it for the next client started on the directory.
 */
export type Release = 'delivered' | 'retry' | 'keep';

/** The `recover` event: messages taken over from processes that are gone. */
export interface SpoolRecovery {
  /** How many messages, to be sent with their original `messageId`s. */
  readonly messages: number;
  /** When the oldest of them was accepted. */
  readonly since: Date;
  /** How many files they came from. */
  readonly files: number;
}

export interface SpoolHooks {
  readonly clock: Clock;
  report(error: EventRelayError): void;
  /**
   * The calls admitted since the last time were written (`failure` undefined), or could not be:
   * refused (`ERR_SPOOL_WRITE`, with `onWriteError: 'refuse'`: the spool keeps nothing of them) or
   * kept in memory only (`ERR_SPOOL_NOT_DURABLE`, with `'memory'`: written once a write succeeds).
   */
  written(failure: SpoolError | undefined): void;
  /** Messages to send without a callback: taken over, or this client's own sent again after a failure. */
  resend(records: SpoolRecord[]): void;
  recovered(info: SpoolRecovery): void;
}

/** Seams for tests. */
export interface SpoolInternals {
  /** The file system and process table (default: node:fs and this process). */
  readonly runtime?: SpoolRuntime;
  /** Milliseconds between looks for files of processes that are gone (and heartbeats of this client's lock). Default 10000. */
  readonly scanInterval?: number;
  /** Age in milliseconds after which a lock that cannot be checked (another host's) counts as abandoned. Default 300000. */
  readonly staleAfter?: number;
  /** Milliseconds before trying again after a failed write. Default 1000. */
  readonly retryDelay?: number;
}

/** Messages of segments taken over that are held in memory at once; more files wait their turn. */
const RECOVERY_BYTES = 8 * 1024 * 1024;

/** Errors of a disk that is full: not a wrong directory, so the client starts and waits for room. */
const FULL = new Set(['ENOSPC', 'EDQUOT']);

/** The spools of this module that are open, closed by one `exit` listener for all of them. */
const open = new Set<Spool>();
let exitListener = false;

/**
 * When the process exits (`process.exit()`, the end of the script, an uncaught exception), writes
 * what the current turn accepted, deletes the files that hold nothing and the lock: what is left
 * is taken over at once by the next client to look.
 */
function closeAtExit(spool: Spool): void {
  open.add(spool);
  const proc = (globalThis as { process?: { on?: (event: string, listener: () => void) => unknown } }).process;
  if (exitListener || typeof proc?.on !== 'function') return;
  exitListener = true;
  proc.on('exit', () => {
    for (const each of [...open]) each.close();
  });
}

/**
 * The disk spool of one client. Every accepted call is queued here and written, with all the
 * calls of the same event-loop turn, in one write at the end of that turn (a microtask); a
 * delivered batch's records are acked the same way, and a segment whose records are all
 * delivered is truncated (the one being written) or deleted. Node-only: it is opened only when
 * the client's `spool` option is set. See docs/spool.md.
 */
export class Spool {
  private readonly fs: SpoolRuntime['fs'];
  private readonly checksum: Checksum;
  private readonly lockPath: string;
  /** Size at which the segment being written is closed and a new one started. */
  private readonly segmentBytes: number;
  private readonly sealed = new Set<Segment>();
  /** Bytes of the sealed segments of this client (the active one has its own `size`). */
  private sealedBytes = 0;
  private readonly adopted = new Set<Segment>();
  /** Segments taken over, waiting to be read and sent. */
  private readonly waiting: Claimed[] = [];
  private recoveringBytes = 0;
  private pending: SpoolRecord[] = [];
  private pendingBytes = 0;
  /** Calls admitted since the client was last told what became of them (`hooks.written`). */
  private fresh = 0;
  private readonly toAck = new Set<Segment>();
  /** Own records whose batch failed with an error that may pass: sent again after the next delivered batch. */
  private parked: SpoolRecord[] = [];
  private scheduled = false;
  private retryTimer: TimerHandle | undefined;
  private scanTimer: TimerHandle | undefined;
  /** The path of the write that failed, while writes fail (reported once per run of failures). */
  private failing: string | undefined;
  private closed = false;
  /** The first look for files to take over ran; `looking` is false once a close stopped the looks. */
  private scanned = false;
  private looking = true;
  private readonly refused = new Set<string>();
  private readonly flushTurn = (): void => this.write(false);

  private constructor(
    private readonly options: ResolvedSpoolOptions,
    private readonly hooks: SpoolHooks,
    private readonly runtime: SpoolRuntime,
    private readonly internals: SpoolInternals,
    private readonly id: string,
    private active: Segment,
    private nextSeq: number,
    /** False while a full disk kept this client from writing its lock: it writes no messages until it can. */
    private locked: boolean,
  ) {
    this.fs = runtime.fs;
    this.checksum = runtime.checksum ?? crc32;
    this.lockPath = runtime.join(options.dir, lockName(id));
    this.segmentBytes = Math.min(8 * 1024 * 1024, Math.max(64 * 1024, Math.floor(options.maxBytes / 8)));
    ownersInThisProcess().add(id);
    closeAtExit(this);
    // Listeners are attached right after the constructor: report what is found once it returned.
    queueMicrotask(() => {
      if (!this.scanned) this.scan();
    });
  }

  /**
   * Creates the directory, this client's lock and its first segment, or throws a `ConfigError`
   * naming `spool.dir` (what cannot be created or written is found now, not at the first call).
   */
  static open(options: ResolvedSpoolOptions, hooks: SpoolHooks, internals: SpoolInternals = {}): Spool {
    const runtime = internals.runtime ?? nodeRuntime();
    if (!runtime) {
      throw new ConfigError('`spool` needs a file system (node:fs, through process.getBuiltinModule): it works on Node.js, not on Cloudflare Workers or Vercel Edge', 'spool');
    }
    const { fs, join } = runtime;
    const { dir } = options;
    const cannot = (what: string, error: unknown) =>
      new ConfigError(`Expected \`spool.dir\` to be a directory this process can ${what}: ${dir} failed with ${errno(error) ?? String(error)}`, 'spool.dir');
    try {
      fs.mkdirSync(dir, { recursive: true });
    } catch (error) {
      throw cannot('create', error);
    }
    let id = '';
    let locked = true;
    for (let attempt = 0; ; attempt++) {
      id = newOwnerId();
      try {
        createLock(fs, join(dir, lockName(id)), identity(runtime.host));
        break;
      } catch (error) {
        if (errno(error) === 'EEXIST' && attempt < 3) continue;
        // A full disk (maybe filled by the spool of a process that died): start, send what is
        // there, which frees room, and write the lock once it fits.
        if (FULL.has(errno(error) ?? '')) {
          locked = false;
          break;
        }
        throw cannot('write', error);
      }
    }
    const first = join(dir, segmentName(id, 0));
    if (!locked) return new Spool(options, hooks, runtime, internals, id, Segment.placeholder(fs, first), 1, false);
    try {
      const segment = Segment.create(fs, first, options.sync === 'always');
      if (options.sync === 'always') syncDirectory(runtime, dir);
      return new Spool(options, hooks, runtime, internals, id, segment, 1, true);
    } catch (error) {
      if (FULL.has(errno(error) ?? '')) return new Spool(options, hooks, runtime, internals, id, Segment.placeholder(fs, first), 1, true);
      removeQuietly(fs, join(dir, lockName(id)));
      throw cannot('write', error);
    }
  }

  /**
   * Queues a message for this turn's write; `undefined` when the spool holds `maxBytes` already
   * (the call is then refused with `QueueFullError`, and nothing of it is kept).
   */
  admit(json: string, bytes: number, time: number): SpoolRecord | undefined {
    const size = messageRecordBytes(bytes);
    if (this.sealedBytes + this.active.size + this.pendingBytes + size > this.options.maxBytes) return undefined;
    const record: SpoolRecord = { json, bytes, time, state: PENDING, segment: undefined, offset: -1, recovering: false };
    this.pending.push(record);
    this.pendingBytes += size;
    this.fresh++;
    this.schedule();
    return record;
  }

  /** Writes the calls of this turn now, rather than at its end (a flush needs them in a batch). */
  writeTurn(): void {
    if (this.scheduled) this.write(false);
  }

  /**
   * Before a close: writes this turn's calls, takes over what processes that are gone left if the
   * first look did not run yet, and looks no more (what it took is sent within the close).
   */
  beforeClose(): void {
    if (this.closed) return;
    this.writeTurn();
    if (!this.scanned) this.scan();
    this.looking = false;
    if (this.scanTimer !== undefined) this.hooks.clock.clearTimeout(this.scanTimer);
    this.scanTimer = undefined;
  }

  /** Records of a batch that finished (see `Release`). */
  release(records: readonly SpoolRecord[], how: Release): void {
    if (this.closed) return;
    let recovered = false;
    for (const record of records) {
      if (record.recovering) {
        record.recovering = false;
        this.recoveringBytes -= record.bytes;
        recovered = true;
      }
      if (how === 'delivered') this.done(record);
      else if (how === 'retry' && record.state !== DONE) this.parked.push(record);
    }
    if (how === 'delivered' && this.parked.length > 0) {
      // The endpoint answers again: what failed earlier goes once more.
      const again = this.parked.filter((r) => r.state !== DONE);
      this.parked = [];
      log('spool: sending again %d messages whose batches failed', again.length);
      if (again.length > 0) this.hooks.resend(again);
    }
    if (recovered) this.recoverNext();
  }

  /** Writes what is queued, then closes and deletes what holds nothing to deliver, and removes the lock. Idempotent. */
  close(): void {
    if (this.closed) return;
    if (this.retryTimer !== undefined) this.hooks.clock.clearTimeout(this.retryTimer);
    if (this.scanTimer !== undefined) this.hooks.clock.clearTimeout(this.scanTimer);
    this.retryTimer = undefined;
    this.write(true);
    this.closed = true;
    for (const segment of [this.active, ...this.sealed, ...this.adopted]) {
      try {
        if (segment.live === 0) segment.remove();
        else segment.close();
      } catch {
        segment.close();
      }
    }
    // Last: once the lock is gone, another client may take over what is left.
    try {
      this.fs.unlinkSync(this.lockPath);
    } catch {
      // already gone
    }
    ownersInThisProcess().delete(this.id);
    open.delete(this);
  }

  private done(record: SpoolRecord): void {
    if (record.state === PENDING) {
      this.pendingBytes -= messageRecordBytes(record.bytes);
    } else if (record.state === WRITTEN) {
      const segment = record.segment!;
      segment.live--;
      segment.acks.push(record.offset);
      this.toAck.add(segment);
      this.schedule();
    }
    record.state = DONE;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(this.flushTurn);
  }

  /**
   * The turn's write: acks first (they may empty a segment), then the new messages, in one write;
   * then the client learns what became of the turn's calls. While writes fail, the retry timer
   * writes the acks (and, with `'memory'`, the calls held) again; with `'refuse'`, each turn's
   * calls are tried at once all the same, so that a call is refused only when its own write failed.
   */
  private write(closing: boolean): void {
    this.scheduled = false;
    if (this.closed) return;
    const retrying = this.retryTimer !== undefined && !closing;
    const memory = this.options.onWriteError === 'memory';
    let acksFailed: { path: string; error: unknown } | undefined;
    let at = this.active.path;
    if (!retrying) {
      try {
        for (const segment of this.toAck) {
          at = segment.path;
          this.writeAcks(segment);
          this.toAck.delete(segment);
        }
      } catch (error) {
        acksFailed = { path: at, error };
      }
    }
    let lost: SpoolError | undefined;
    if (this.pending.length > 0) {
      if (retrying && memory) {
        lost = this.notDurable(this.failing ?? this.active.path, undefined);
      } else {
        try {
          this.writeMessages();
        } catch (error) {
          lost = memory ? this.notDurable(this.active.path, error) : this.refuse(this.active.path, error);
        }
      }
    }
    if (acksFailed !== undefined) {
      this.writeFailed(acksFailed.path, acksFailed.error, closing);
    } else if (lost !== undefined) {
      // Each call heard of it. Refused calls need no retry (the next turn's are tried anyway); held ones do.
      this.failing ??= lost.file;
      if (memory && !closing) this.retryLater();
    } else if (!retrying) {
      if (this.failing !== undefined) log('spool: writing to %s works again', at);
      this.failing = undefined;
    }
    const fresh = this.fresh;
    this.fresh = 0;
    if (fresh > 0) this.hooks.written(lost);
  }

  /** With `'refuse'`: drops the calls that could not be written; the client fails each with the error returned. */
  private refuse(path: string, error: unknown): SpoolError {
    for (const record of this.pending) record.state = DONE;
    this.pending = [];
    this.pendingBytes = 0;
    return new SpoolError(
      `Refused: the call could not be written to the spool file ${path} (${errno(error) ?? 'an error'}), so it would not survive a crash; ` +
      'it is not sent. Check the disk (space, permissions); calls are taken again as soon as a write succeeds.',
      'ERR_SPOOL_WRITE',
      { file: path, cause: error },
    );
  }

  /** With `'memory'`: the calls stay queued for the next write, and are sent from memory meanwhile. */
  private notDurable(path: string, error: unknown): SpoolError {
    return new SpoolError(
      `Kept in memory only: the call could not be written to the spool file ${path}${error === undefined ? '' : ` (${errno(error) ?? 'an error'})`}, ` +
      "so it would not survive a crash until a write succeeds (tried again every second); it is sent as usual (spool.onWriteError: 'memory').",
      'ERR_SPOOL_NOT_DURABLE',
      { file: path, cause: error },
    );
  }

  private writeAcks(segment: Segment): void {
    if (segment.live > 0) {
      const bytes = encodeAcks(segment.acks, this.checksum);
      segment.append(bytes, false);
      segment.acks = [];
      if (this.sealed.has(segment)) this.sealedBytes += bytes.length;
    } else if (segment === this.active) {
      // Emptied back to its header: a part written by a failed write is gone too.
      segment.truncate();
      segment.broken = false;
    } else {
      segment.remove();
      if (this.sealed.delete(segment)) this.sealedBytes -= segment.size;
      if (segment.adopted) {
        this.adopted.delete(segment);
        log('spool: delivered everything taken over in %s', segment.path);
      }
    }
  }

  private writeMessages(): void {
    if (this.pending.length === 0) return;
    const entries: SpoolRecord[] = [];
    let total = 0;
    for (const record of this.pending) {
      if (record.state !== PENDING) continue;
      entries.push(record);
      total += messageRecordBytes(record.bytes);
    }
    if (entries.length > 0) {
      if (this.active.broken || this.active.size >= this.segmentBytes) this.rotate();
      const segment = this.active;
      let offset = segment.size;
      segment.append(encodeMessages(entries, total, this.checksum), this.options.sync === 'always');
      for (const record of entries) {
        record.state = WRITTEN;
        record.segment = segment;
        record.offset = offset;
        offset += messageRecordBytes(record.bytes);
      }
      segment.live += entries.length;
    }
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** Starts a new segment; the full one is kept until its records are delivered. */
  private rotate(): void {
    if (!this.locked) {
      // No files of this client's own before its lock: others would count them abandoned.
      createLock(this.fs, this.lockPath, identity(this.runtime.host));
      this.locked = true;
    }
    const sync = this.options.sync === 'always';
    const next = Segment.create(this.fs, this.runtime.join(this.options.dir, segmentName(this.id, this.nextSeq++)), sync);
    if (sync) syncDirectory(this.runtime, this.options.dir);
    const full = this.active;
    this.active = next;
    if (full.live === 0 && full.acks.length === 0) {
      full.remove();
    } else {
      full.close();
      this.sealed.add(full);
      this.sealedBytes += full.size;
    }
  }

  /** Reports a run of failed writes once, and tries again in a second. */
  private writeFailed(path: string, error: unknown, closing: boolean): void {
    if (this.failing === undefined) {
      this.failing = path;
      const code = errno(error) ?? 'an error';
      this.hooks.report(
        new SpoolError(
          `Could not write to the spool file ${path} (${code}): records of delivered messages stay marked undelivered until a ` +
          'write succeeds (the spool tries again every second), and would be sent again after a crash. Check the disk (space, permissions).',
          'ERR_SPOOL_WRITE',
          { file: path, cause: error },
        ),
      );
    }
    if (!closing) this.retryLater();
  }

  private retryLater(): void {
    if (this.retryTimer !== undefined) return;
    this.retryTimer = this.hooks.clock.setTimeout(() => {
      this.retryTimer = undefined;
      this.write(false);
    }, this.internals.retryDelay ?? 1000);
  }

  /** Looks for the files of processes that are gone, takes them over, and refreshes this client's lock; then again later. */
  private scan(): void {
    if (this.closed || !this.looking) return;
    this.scanned = true;
    this.scanTimer = this.hooks.clock.setTimeout(() => this.scan(), this.internals.scanInterval ?? 10_000);
    this.heartbeat();
    let claimed: Claimed[];
    try {
      claimed = takeOver({
        runtime: this.runtime,
        checksum: this.checksum,
        dir: this.options.dir,
        id: this.id,
        now: Date.now(),
        staleAfter: this.internals.staleAfter ?? 300_000,
        nextPath: () => this.runtime.join(this.options.dir, segmentName(this.id, this.nextSeq++)),
        report: (error) => this.hooks.report(error),
        refused: this.refused,
      });
    } catch (error) {
      log('spool: could not look for files to take over: %s', errno(error) ?? String(error));
      return;
    }
    if (claimed.length === 0) return;
    const messages = claimed.reduce((sum, c) => sum + c.messages, 0);
    const since = new Date(claimed.reduce((min, c) => Math.min(min, c.oldest), Infinity));
    log('spool: took over %d messages in %d files, the oldest accepted at %s', messages, claimed.length, since.toISOString());
    this.waiting.push(...claimed);
    this.hooks.recovered({ messages, since, files: claimed.length });
    this.recoverNext();
  }

  /** Reads taken-over segments and hands their messages to the client, a few megabytes at a time. */
  private recoverNext(): void {
    while (!this.closed && this.recoveringBytes < RECOVERY_BYTES && this.waiting.length > 0) {
      const claimed = this.waiting.shift()!;
      let file: Buffer;
      try {
        file = readBytes(this.fs, claimed.path);
      } catch (error) {
        this.hooks.report(new SpoolError(`Could not read the spool file ${claimed.path} (${errno(error) ?? 'error'}); it is left for the next client`, 'ERR_SPOOL_CORRUPT', { file: claimed.path, offset: 0, cause: error }));
        continue;
      }
      const { messages } = scanRecords(file, this.checksum);
      const segment = Segment.adopt(this.fs, claimed.path, claimed.size, messages.length);
      this.adopted.add(segment);
      const records = messages.map(
        (m): SpoolRecord => ({ json: m.json, bytes: m.bytes, time: m.time, state: WRITTEN, segment, offset: m.offset, recovering: true }),
      );
      for (const record of records) this.recoveringBytes += record.bytes;
      this.hooks.resend(records);
    }
  }

  private heartbeat(): void {
    try {
      // File times are wall-clock times: compared with Date.now(), never with the client's clock seam.
      const now = new Date();
      this.fs.utimesSync(this.lockPath, now, now);
    } catch (error) {
      if (errno(error) !== 'ENOENT') return;
      // Removed by hand, or never written (a full disk at the start): put it back, so that no
      // other process takes this client's files.
      try {
        createLock(this.fs, this.lockPath, identity(this.runtime.host));
        this.locked = true;
      } catch {
        // tried again at the next scan
      }
    }
  }
}

function removeQuietly(fs: SpoolRuntime['fs'], path: string): void {
  try {
    fs.unlinkSync(path);
  } catch {
    // nothing more to undo
  }
}

/** With `sync: 'always'`, a new file's name is made durable too (fsync of the directory; not possible everywhere). */
function syncDirectory(runtime: SpoolRuntime, dir: string): void {
  try {
    const fd = runtime.fs.openSync(dir, 'r');
    try {
      runtime.fs.fsyncSync(fd);
    } finally {
      runtime.fs.closeSync(fd);
    }
  } catch {
    // Windows cannot open a directory; its file systems journal names on their own
  }
}
