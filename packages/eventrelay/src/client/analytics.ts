import createDebug from 'debug';
import { systemClock, type Clock } from '../clock';
import { ClientClosedError, CloseTimeoutError, EventRelayError, HttpError, NetworkError, PayloadTooLargeError, QueueFullError, ValidationError, type SpoolError } from '../errors';
import { activeTraceFields } from '../internal/opentelemetry';
import { isPlainObject } from '../internal/values';
import { defaultTransport } from '../transport/default';
import { sendWithRetries } from '../transport/retry';
import { basicAuthorization } from '../transport/target';
import type { SendOutcome } from '../transport/retry';
import type { Transport } from '../transport/transport';
import { VERSION } from '../version';
import { Batch } from './batch';
import { MAX_BATCH_BYTES, MAX_MESSAGE_BYTES } from '../messages/limits';
import { buildMessage, serializeMessage } from './message';
import { resolveOptions, type AnalyticsOptions, type ResolvedOptions } from './options';
import type {
  AliasParams,
  Callback,
  GroupParams,
  IdentifyParams,
  MessageType,
  PageParams,
  ScreenParams,
  TrackParams,
} from '../messages/calls';
import { checkMessage, readCall } from '../messages/rules';
import { Emitter } from './emitter';
import { gzip, utf8ByteLength } from './encoding';
import { exitHooks } from './exit';
import { Spool, type Release, type SpoolInternals, type SpoolRecord, type SpoolRecovery } from './spool/spool';
import { emitWarning } from '../internal/warning';

const log = createDebug('analytics');

/** Seams for tests: not part of the documented options. */
export interface AnalyticsInternals {
  readonly clock?: Clock;
  readonly random?: () => number;
  readonly spool?: SpoolInternals;
}

export interface CloseOptions {
  /** Milliseconds to wait for queued and in-flight messages. Default 10000. */
  readonly timeout?: number;
}

export type FlushReason = 'count' | 'size' | 'interval' | 'manual' | 'close' | 'exit';

/** The client's events and what their listeners get. */
export interface AnalyticsEvents {
  [event: string]: readonly unknown[];
  /** A refused or failed message (with its id when known), or an exception thrown by a callback. */
  error: [error: EventRelayError, messageId: string | undefined];
  /** With `spool`: messages taken over from processes that are gone, sent without callbacks. */
  recover: [info: SpoolRecovery];
}

/**
 * The server-side client. Calls are validated, serialized once and queued in memory;
 * batches go to `POST {endpoint}/v1/batch` in the background with retries.
 *
 * Events: `error` (error, messageId?) for every refused or failed message, for exceptions
 * thrown by callbacks, and at once for the first network error of a send (its retries go on).
 * An error that reaches neither a callback nor an `error` listener becomes a warning, once per
 * error code and client (`process.emitWarning`, or `console.warn` where there is no process):
 * never silent, and the client never throws into your code.
 *
 * Runs on Node, Bun, Deno, Cloudflare Workers and Vercel Edge: nothing here imports a Node
 * module. What only Node offers stays in its own file: the `node:http` transport (loaded when
 * the runtime has it) and the exit hook (`process.on('beforeExit')`, where there is a process).
 */
export class Analytics extends Emitter<AnalyticsEvents> {
  private readonly options: ResolvedOptions;
  private readonly transport: Transport;
  private readonly clock: Clock;
  private readonly random: () => number;
  /** Sends under way (at most `concurrency`), and the batches waiting for one to end, first in first out. */
  private sending = 0;
  private readonly waiting: Waiting[] = [];
  private waitingHead = 0;
  private readonly headers: Record<string, string>;
  private readonly inFlight = new Set<Promise<void>>();
  /** Batches handed off and not settled yet. */
  private readonly active = new Set<Batch>();
  private batch: Batch;
  /** Set at the close timeout: nothing more is sent or retried. */
  private abandoned = false;
  private readonly onBeforeExit = (): void => this.flushBeforeExit();
  private timer: unknown;
  /** Messages accepted and not yet finished (queued or in flight). */
  private held = 0;
  /** Resolves the promise handed to `waitUntil` for a batch, once the batch is settled. */
  private readonly releases = new Map<Batch, () => void>();
  private closing: Promise<void> | undefined;
  /** With the `spool` option: the files accepted calls are kept in until delivered. */
  private readonly spool: Spool | undefined;
  /** With `spool`: calls of this turn, batched once the spool wrote them (or refused if it could not). */
  private staged: { record: SpoolRecord; id: string; callback: Callback | undefined }[] = [];
  /** Error codes already written as a warning (errors no callback or listener heard). */
  private readonly warned = new Set<string>();

  constructor(options: AnalyticsOptions, internals: AnalyticsInternals = {}) {
    super();
    this.options = resolveOptions(options);
    this.transport = options.transport ?? defaultTransport();
    this.clock = internals.clock ?? systemClock;
    this.random = internals.random ?? Math.random;
    this.batch = new Batch(MAX_BATCH_BYTES);
    this.headers = {
      authorization: basicAuthorization(`${this.options.writeKey}:`),
      'content-type': 'application/json',
      'user-agent': `eventrelay-node/${VERSION}`,
    };
    if (this.options.gzip) this.headers['content-encoding'] = 'gzip';
    const spool = this.options.disable ? undefined : this.options.spool;
    this.spool = spool && Spool.open(spool, {
      clock: this.clock,
      report: (error) => this.report(error, undefined),
      written: (failure) => this.written(failure),
      resend: (records) => this.resend(records),
      recovered: (info) => this.emit('recover', info),
    }, internals.spool);
  }

  /** Messages accepted and not yet delivered or failed. */
  get pending(): number {
    return this.held;
  }

  identify(params: IdentifyParams, callback?: Callback): void {
    this.enqueue('identify', params, callback);
  }

  track(params: TrackParams, callback?: Callback): void {
    this.enqueue('track', params, callback);
  }

  page(params: PageParams, callback?: Callback): void {
    this.enqueue('page', params, callback);
  }

  screen(params: ScreenParams, callback?: Callback): void {
    this.enqueue('screen', params, callback);
  }

  group(params: GroupParams, callback?: Callback): void {
    this.enqueue('group', params, callback);
  }

  alias(params: AliasParams, callback?: Callback): void {
    this.enqueue('alias', params, callback);
  }

  /**
   * Sends everything queued now and resolves when it and every batch already in
   * flight are finished (delivered or failed: see the callbacks). Never rejects.
   */
  flush(): Promise<void> {
    this.spool?.writeTurn();
    this.handOff('manual');
    return this.holdOpen(this.settled());
  }

  /**
   * Flushes, then refuses new calls (`ClientClosedError`). Resolves when all is sent or after
   * `timeout` ms, whichever is first. At the timeout, every message not yet confirmed gets
   * its callback called with `CloseTimeoutError` and is no longer retried, so the process can
   * exit with no callback left behind. Calling it again returns the same promise.
   */
  closeAndFlush(options: CloseOptions = {}): Promise<void> {
    if (this.closing) return this.closing;
    const timeout = options.timeout ?? 10_000;
    let begin!: () => void;
    // Set before the spool's last write and takeover: no call is taken from now on, and what they report is heard by a closing client.
    this.closing = new Promise<void>((resolve) => (begin = resolve)).then(() => {
      let timer: unknown;
      const deadline = new Promise<'timeout'>((resolve) => {
        // Kept alive: a process awaiting closeAndFlush() must not exit while a retry waits.
        timer = this.clock.setTimeout(() => resolve('timeout'), timeout, true);
      });
      // Until nothing is in flight: the spool sends what it took over from processes that are gone a few megabytes at a time.
      return Promise.race([this.drained(), deadline]).then((outcome) => {
        this.clock.clearTimeout(timer);
        // `active`, not `held`: batches the spool sends again hold no call but are abandoned too.
        if (outcome === 'timeout' && this.active.size > 0) this.abandon(timeout);
        this.spool?.close();
        if (this.held === 0) this.transport.close?.();
      });
    });
    this.spool?.beforeClose();
    this.handOff('close');
    begin();
    return this.closing;
  }

  /** At the close timeout: fails what is still pending, once, and stops sending. */
  private abandon(timeout: number): void {
    log('closeAndFlush: %d messages still pending after %d ms; failing their callbacks', this.held, timeout);
    this.abandoned = true;
    const batches = [...this.active];
    // Each batch's callbacks hear the cause of its own last failed attempt; the event, the latest of them.
    const causes = batches.map((batch) => batch.lastError).filter((cause) => cause !== undefined);
    this.report(new CloseTimeoutError(timeout, causes.at(-1)), undefined, batches.every(heard));
    for (const batch of batches) {
      const error = new CloseTimeoutError(timeout, batch.lastError);
      this.settle(batch, () => error);
    }
  }

  /**
   * On `beforeExit` (the event loop ran dry: the client's timers are unref'd): sends what is
   * queued and keeps the process alive while batches are in flight, retries included, so a
   * script that tracks and ends delivers and runs every callback.
   */
  private flushBeforeExit(): void {
    this.spool?.writeTurn();
    if (this.held === 0 || this.abandoned) return;
    log('process about to exit: flushing %d pending messages', this.held);
    this.handOff('exit');
    void this.holdOpen(this.settled());
  }

  private enqueue(type: MessageType, params: unknown, callback: Callback | undefined): void {
    const cb = typeof callback === 'function' ? callback : undefined;
    const seen: { id?: string } = {};
    let refusal: EventRelayError | undefined;
    try {
      refusal = this.accept(type, params, cb, seen);
    } catch (thrown) {
      refusal =
        thrown instanceof EventRelayError
          ? thrown
          : new ValidationError(`${type}() could not read its parameters: a getter, Proxy or method in them threw`, undefined, { cause: thrown });
    }
    // Outside the try: a refusal is reported once, whatever threw before it.
    if (refusal !== undefined) this.refuse(refusal, seen.id, cb);
  }

  /** Validates, builds, serializes and queues one call; returns why it was refused, if it was. */
  private accept(type: MessageType, params: unknown, callback: Callback | undefined, seen: { id?: string }): EventRelayError | undefined {
    if (this.closing) return new ClientClosedError();
    // Each field is read once, into a plain snapshot: getters and Proxies run once, and
    // what they throw becomes this call's error, never the caller's exception.
    const call = readCall(type, params);
    const invalid = checkMessage(call);
    if (invalid) return invalid;

    // The span active in the caller's code, when `@opentelemetry/api` is there: the message joins its trace.
    const message = buildMessage(type, call, this.clock.now(), activeTraceFields());
    const id = message.messageId as string;
    seen.id = id;
    const json = serializeMessage(message);
    const bytes = utf8ByteLength(json);
    if (bytes > MAX_MESSAGE_BYTES) {
      return new PayloadTooLargeError(
        `The ${type} message is ${bytes} bytes once serialized; the limit is ${MAX_MESSAGE_BYTES} bytes (32 KB) per call. ` +
        'Send fewer or smaller properties.',
        bytes,
        MAX_MESSAGE_BYTES,
      );
    }
    if (this.held >= this.options.maxQueueSize) return new QueueFullError(this.options.maxQueueSize);
    if (this.options.disable) {
      if (callback) queueMicrotask(() => this.callBack(callback, undefined, id));
      return undefined;
    }
    if (this.spool) {
      const record = this.spool.admit(json, bytes, this.clock.now());
      if (record === undefined) return new QueueFullError(this.options.maxQueueSize, this.options.spool!.maxBytes);
      // Batched after the turn's write: a call the disk does not take is refused, never sent.
      this.staged.push({ record, id, callback });
      this.hold1();
      return undefined;
    }
    this.hold1();
    this.add(json, bytes, id, callback, undefined);
    return undefined;
  }

  /** Counts an accepted call as held until it is delivered, failed or refused. */
  private hold1(): void {
    if (this.held++ === 0) exitHooks.add(this.onBeforeExit);
  }

  /** The spool wrote the staged calls (`failure` undefined), kept them in memory (`ERR_SPOOL_NOT_DURABLE`), or refused them. */
  private written(failure: SpoolError | undefined): void {
    const staged = this.staged;
    this.staged = [];
    if (failure?.code === 'ERR_SPOOL_WRITE') {
      this.held -= staged.length;
      if (this.held === 0) exitHooks.delete(this.onBeforeExit);
      for (const { id, callback } of staged) this.refuse(failure, id, callback);
      return;
    }
    for (const { record, id, callback } of staged) {
      this.add(record.json, record.bytes, id, callback, record);
      if (failure !== undefined) this.report(failure, id);
    }
  }

  private add(json: string, bytes: number, id: string, callback: Callback | undefined, record: SpoolRecord | undefined): void {
    if (this.batch.tryAdd(json, bytes, id, callback, record) === 'full') {
      this.handOff('size');
      this.batch.tryAdd(json, bytes, id, callback, record);
    }
    if (this.batch.length === 1) this.watch(this.batch);
    if (this.batch.length >= this.options.flushAt) {
      this.handOff('count');
    } else if (this.batch.length === 1) {
      this.timer = this.clock.setTimeout(() => {
        this.timer = undefined;
        this.handOff('interval');
      }, this.options.flushInterval);
    }
  }

  /**
   * Hands `waitUntil` a promise for a batch that just got its first message, settled with the
   * batch: the serverless runtime keeps the function alive while the batch waits and is sent.
   */
  private watch(batch: Batch): void {
    const waitUntil = this.options.waitUntil;
    if (waitUntil === undefined) return;
    const settled = new Promise<void>((resolve) => this.releases.set(batch, resolve));
    try {
      waitUntil(settled);
    } catch (thrown) {
      // The batch is sent all the same; the runtime may just not wait for it.
      this.report(
        new EventRelayError('The `waitUntil` function passed to the client threw (the batch is sent anyway); the error is in `cause`', 'ERR_CALLBACK', {
          cause: thrown,
        }),
        undefined,
      );
    }
  }

  /** Moves the current batch to the send queue. */
  private handOff(reason: FlushReason): void {
    if (this.timer !== undefined) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.batch;
    if (batch.length === 0) return;
    this.batch = new Batch(MAX_BATCH_BYTES);
    if (log.enabled) log('flush (%s): %d messages, %d bytes', reason, batch.length, batch.size);
    this.dispatch(batch, true);
  }

  /**
   * Queues a batch for sending: at once while fewer than `concurrency` sends are under way, else
   * after the batches queued before it. Settles once it finished, and the halves it was split into, if it was.
   */
  private dispatch(batch: Batch, held = false): Promise<void> {
    batch.seal();
    this.active.add(batch);
    // `done` runs once the send settled, a turn later at the earliest: `job` is set by then.
    const job: Promise<void> = new Promise<void>((resolve) => {
      // `held`: counted in flight until it settles (what `flush()` and `closeAndFlush()` wait for).
      const done = held
        ? () => {
            this.inFlight.delete(job);
            resolve();
          }
        : resolve;
      if (this.sending < this.options.concurrency) this.start(batch, done);
      else this.waiting.push({ batch, done });
    });
    if (held) this.inFlight.add(job);
    return job;
  }

  private start(batch: Batch, done: () => void): void {
    this.sending++;
    let sending: Promise<SendOutcome>;
    try {
      sending = this.send(batch);
    } catch (thrown) {
      sending = Promise.reject(thrown);
    }
    // Two-argument then: `sent` runs once whichever way the send settles.
    sending.then(
      (outcome) => this.sent(batch, outcome, done),
      (error: unknown) => this.sent(batch, { ok: false, error: asEventRelayError(error) }, done),
    );
  }

  /** A send ended: its slot goes to the next batch waiting, then the batch is finished. */
  private sent(batch: Batch, outcome: SendOutcome, done: () => void): void {
    this.sending--;
    if (this.waitingHead < this.waiting.length) {
      const next = this.waiting[this.waitingHead]!;
      this.waiting[this.waitingHead++] = undefined as unknown as Waiting;
      if (this.waitingHead === this.waiting.length) {
        // Emptied in place: the field keeps one array, so V8's code that reads it stays valid.
        this.waiting.length = 0;
        this.waitingHead = 0;
      }
      this.start(next.batch, next.done);
    }
    let finished: void | Promise<void>;
    try {
      finished = this.finish(batch, outcome);
    } catch (thrown) {
      done();
      throw thrown;
    }
    if (finished === undefined) done();
    else void finished.then(done);
  }

  /** Sends again, without callbacks, what the spool holds: taken over from a process that is gone, or failed earlier. */
  private resend(records: readonly SpoolRecord[]): void {
    // While closing too: what was taken over goes within the close's timeout.
    if (this.abandoned) return;
    let batch = new Batch(MAX_BATCH_BYTES, true);
    for (const record of records) {
      if (batch.tryAdd(record.json, record.bytes, '', undefined, record) === 'added') continue;
      this.dispatch(batch, true);
      batch = new Batch(MAX_BATCH_BYTES, true);
      batch.tryAdd(record.json, record.bytes, '', undefined, record);
    }
    if (batch.length > 0) this.dispatch(batch, true);
  }

  private send(batch: Batch): Promise<SendOutcome> {
    if (this.abandoned || batch.settled) return Promise.resolve({ ok: false, error: new CloseTimeoutError(0) });
    const started = this.clock.now();
    const text = batch.body(new Date(started));
    if (this.options.gzip) return gzip(text).then((body) => this.post(batch, body, started));
    return this.post(batch, text, started);
  }

  /** POSTs a batch's body, with the retries. */
  private post(batch: Batch, body: Uint8Array | string, started: number): Promise<SendOutcome> {
    const sent = sendWithRetries(
      { url: this.options.url, headers: this.headers, body, timeout: this.options.timeout, readBody: true },
      {
        transport: this.transport,
        clock: this.clock,
        random: this.random,
        policy: this.options,
        stopped: () => this.abandoned,
        onRetry: (attempt, delay, cause) => {
          log('retry %d of a batch of %d in %d ms after %s', attempt, batch.length, delay, cause.message);
          batch.lastError = cause;
          // The first network error of a send is told at once (a typo in the endpoint's port shows
          // now, not after every retry); the retries go on behind it.
          if (attempt === 1 && cause instanceof NetworkError) this.report(retrying(cause, this.options.maxRetries, batch.length), undefined);
        },
      },
    );
    if (!log.enabled) return sent;
    return sent.then((outcome) => {
      const result = outcome.ok ? 'delivered' : `failed: ${outcome.error.message}`;
      log('batch of %d messages %s in %d ms', batch.length, result, this.clock.now() - started);
      return outcome;
    });
  }

  private finish(batch: Batch, outcome: SendOutcome): void | Promise<void> {
    if (batch.settled) return;
    if (!outcome.ok) {
      if (outcome.error instanceof HttpError && outcome.error.status === 413) return this.tooLarge(batch);
      if (batch.records.length > 0) this.spool?.release(batch.records, releaseOf(outcome.error));
      this.report(outcome.error, undefined, heard(batch));
      this.settle(batch, () => outcome.error);
      return;
    }
    const refused = rejectedByIndex(outcome.response.body, batch.length);
    if (refused.size > 0) log('the endpoint refused %d of %d messages of a batch', refused.size, batch.length);
    if (refused.size > 0) {
      // Every refused message is reported, with its id when the batch kept it (messages with a callback).
      const ids = new Map(batch.callbacks.map(({ index, id }) => [index, id]));
      for (const [index, error] of refused) this.report(error, ids.get(index), ids.has(index));
    }
    // Before the callbacks: a callback that sees its message delivered finds its ack queued.
    if (batch.records.length > 0) this.spool?.release(batch.records, 'delivered');
    this.settle(batch, (index) => refused.get(index));
  }

  /**
   * A 413 answer: something in front of the endpoint (a proxy) takes smaller bodies than the 500 KB
   * this client sends. The batch goes again as two halves, and so on down to single messages; one
   * refused on its own fails with `PayloadTooLargeError` (and leaves the spool: it can never be
   * sent). Every other message is delivered; each callback runs once.
   */
  private tooLarge(batch: Batch): Promise<void> | void {
    if (batch.length > 1) {
      log('413 for a batch of %d messages (%d bytes): sending it in two halves', batch.length, batch.size);
      batch.settled = true;
      this.active.delete(batch);
      const [first, second] = batch.halves(utf8ByteLength);
      return Promise.all([this.dispatch(first), this.dispatch(second)]).then(() => {
        this.releases.get(batch)?.();
        this.releases.delete(batch);
      });
    }
    const error = new PayloadTooLargeError(
      `The endpoint answered 413 (Payload Too Large) to a request holding only this message (a body of ${batch.size} bytes): ` +
      'something in front of it (a proxy) takes smaller bodies than the 500 KB this client sends. Raise that limit, or send smaller messages.',
      batch.size,
      batch.size - 1,
    );
    if (batch.records.length > 0) this.spool?.release(batch.records, 'delivered');
    this.report(error, batch.callbacks[0]?.id, heard(batch));
    this.settle(batch, () => error);
  }

  /** Runs a batch's callbacks, once, and releases its messages. */
  private settle(batch: Batch, errorFor: (index: number) => EventRelayError | undefined): void {
    if (batch.settled) return;
    batch.settled = true;
    this.active.delete(batch);
    // Batches the spool sends again hold no call of this client's.
    if (!batch.resent) {
      this.held -= batch.length;
      if (this.held === 0) exitHooks.delete(this.onBeforeExit);
    }
    for (const { index, id, callback } of batch.callbacks) this.callBack(callback, errorFor(index), id);
    this.releases.get(batch)?.();
    this.releases.delete(batch);
  }

  /** Keeps the process open while a caller awaits `promise` (the client's own timers are unref'd). */
  private holdOpen(promise: Promise<void>): Promise<void> {
    if (this.inFlight.size === 0) return promise;
    const timer = this.clock.setTimeout(() => {}, 2 ** 31 - 1, true);
    return promise.finally(() => this.clock.clearTimeout(timer));
  }

  private settled(): Promise<void> {
    return Promise.all(this.inFlight).then(() => undefined);
  }

  /** Resolves once nothing is in flight, batches sent meanwhile included (the spool's, as it reads what it took over). */
  private async drained(): Promise<void> {
    while (this.inFlight.size > 0) await this.settled();
  }

  private refuse(error: EventRelayError, id: string | undefined, callback: Callback | undefined): void {
    log('refused a message: %s', error.message);
    if (typeof callback === 'function') queueMicrotask(() => this.callBack(callback, error, id));
    this.report(error, id, typeof callback === 'function');
  }

  /** Runs a caller's callback; what it throws is reported, never lets other callbacks go uncalled. */
  private callBack(callback: Callback, error: EventRelayError | undefined, id: string | undefined): void {
    try {
      callback(error, id);
    } catch (thrown) {
      this.report(
        new EventRelayError('A callback passed to the client threw; the error is in `cause`', 'ERR_CALLBACK', { cause: thrown }),
        id,
      );
    }
  }

  /**
   * Emits `error`; with no listener, an error no callback got (`heard` false) is written as a
   * warning instead, once per error code: a failure is never silent.
   */
  private report(error: EventRelayError, id: string | undefined, heard = false): void {
    if (this.listenerCount('error') > 0) {
      try {
        this.emit('error', error, id);
      } catch (thrown) {
        log('an error listener threw: %s', thrown instanceof Error ? thrown.message : String(thrown));
      }
      return;
    }
    if (heard || this.warned.has(error.code)) return;
    this.warned.add(error.code);
    emitWarning(warningText(error), error.code);
  }
}

/** A batch waiting for a free send, and what settles its `dispatch` promise. */
interface Waiting {
  readonly batch: Batch;
  readonly done: () => void;
}

/** Whether every message of a batch has a callback to hear its error (a batch the spool sends again has none). */
function heard(batch: Batch): boolean {
  return !batch.resent && batch.callbacks.length === batch.length;
}

/** The first network error of a send, told at once: the same code and cause, saying that retries go on. */
function retrying(cause: NetworkError, maxRetries: number, messages: number): NetworkError {
  return new NetworkError(
    `${cause.message}; retrying (up to ${maxRetries} times, with backoff): the ${messages === 1 ? 'message is' : `${messages} messages are`} not failed yet`,
    { code: cause.code as 'ERR_NETWORK', retryable: true, cause },
  );
}

/** The warning for an error nobody heard: what failed, the field or cause, and how to listen. */
function warningText(error: EventRelayError): string {
  const field = (error as { field?: unknown }).field;
  const at = typeof field === 'string' && field !== '' ? ` (field \`${field}\`)` : '';
  return (
    `${error.message}${at}. No callback and no 'error' listener got this error: pass a callback, ` +
    `analytics.track(params, (error, messageId) => ...), or listen with analytics.on('error', (error, messageId) => ...). ` +
    'Shown once per error code.'
  );
}

/** Longest server-given reason kept in an error message. */
const MAX_REASON_LENGTH = 300;

/**
 * The messages an ingestion answer refused: `{ success: true, rejected: [{ index, code, field,
 * message }] }` (eventrelay's forwarder). Anything else (no body, another collector's answer,
 * a malformed list) refuses nothing: a 2xx means delivered.
 */
function rejectedByIndex(body: string | undefined, length: number): Map<number, EventRelayError> {
  const refused = new Map<number, EventRelayError>();
  if (body === undefined || !body.includes('"rejected"')) return refused;
  let answer: unknown;
  try {
    answer = JSON.parse(body);
  } catch {
    return refused;
  }
  const list = isPlainObject(answer) ? answer.rejected : undefined;
  if (!Array.isArray(list)) return refused;
  for (const entry of list) {
    if (!isPlainObject(entry)) continue;
    const { index, code, field, message } = entry;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= length || refused.has(index)) continue;
    const reason = `The endpoint refused this message: ${typeof message === 'string' ? message.slice(0, MAX_REASON_LENGTH) : 'no reason given'}`;
    refused.set(
      index,
      code === 'message_too_large'
        ? new PayloadTooLargeError(reason, numberOr(entry.size, 0), numberOr(entry.limit, MAX_MESSAGE_BYTES))
        : new ValidationError(reason, typeof field === 'string' ? field.slice(0, 100) : undefined),
    );
  }
  return refused;
}

/** What the spool keeps of a failed batch: what may go through later is sent again after the next delivered batch. */
function releaseOf(error: EventRelayError): Release {
  return (error instanceof HttpError || error instanceof NetworkError) && error.retryable ? 'retry' : 'keep';
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function asEventRelayError(error: unknown): EventRelayError {
  return error instanceof EventRelayError
    ? error
    : new EventRelayError(`Unexpected failure while sending a batch: ${String(error)}`, 'ERR_INTERNAL', { cause: error });
}
