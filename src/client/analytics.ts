import { EventEmitter } from 'node:events';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import createDebug from 'debug';
import PQueue from 'p-queue';
import { systemClock, type Clock } from '../clock';
import { ClientClosedError, EventRelayError, PayloadTooLargeError, QueueFullError, SerializationError } from '../errors';
import { NodeTransport } from '../transport/node';
import { sendWithRetries } from '../transport/retry';
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
import { validateParams } from '../messages/rules';

const gzip = promisify(gzipCallback);
const log = createDebug('analytics');

/** Seams for tests: not part of the documented options. */
export interface AnalyticsInternals {
  readonly clock?: Clock;
  readonly random?: () => number;
}

export interface CloseOptions {
  /** Milliseconds to wait for queued and in-flight messages. Default 10000. */
  readonly timeout?: number;
}

export type FlushReason = 'count' | 'size' | 'interval' | 'manual' | 'close';

/**
 * The server-side client. Calls are validated, serialized once and queued in memory;
 * batches go to `POST {endpoint}/v1/batch` in the background with retries.
 *
 * Events: `error` (error, messageId?) for every refused or failed message and for
 * exceptions thrown by callbacks. Without an `error` listener, failures are only
 * reported to callbacks and the debug log: the client never throws into your code.
 */
export class Analytics extends EventEmitter {
  private readonly options: ResolvedOptions;
  private readonly transport: Transport;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly queue: PQueue;
  private readonly headers: Record<string, string>;
  private readonly inFlight = new Set<Promise<void>>();
  private batch: Batch;
  private timer: unknown;
  /** Messages accepted and not yet finished (queued or in flight). */
  private held = 0;
  private closing: Promise<void> | undefined;

  constructor(options: AnalyticsOptions, internals: AnalyticsInternals = {}) {
    super();
    this.options = resolveOptions(options);
    this.transport = options.transport ?? new NodeTransport();
    this.clock = internals.clock ?? systemClock;
    this.random = internals.random ?? Math.random;
    this.queue = new PQueue({ concurrency: this.options.concurrency });
    this.batch = new Batch(MAX_BATCH_BYTES);
    this.headers = {
      authorization: `Basic ${Buffer.from(`${this.options.writeKey}:`).toString('base64')}`,
      'content-type': 'application/json',
      'user-agent': `eventrelay-node/${VERSION}`,
    };
    if (this.options.gzip) this.headers['content-encoding'] = 'gzip';
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
    this.handOff('manual');
    return this.holdOpen(this.settled());
  }

  /**
   * Flushes, then refuses new calls (`ClientClosedError`). Resolves when all is sent
   * or after `timeout` ms, whichever is first; what is still in flight then goes on
   * in the background and its callbacks still fire. Calling it again returns the same promise.
   */
  closeAndFlush(options: CloseOptions = {}): Promise<void> {
    if (this.closing) return this.closing;
    const timeout = options.timeout ?? 10_000;
    this.handOff('close');
    let timer: unknown;
    const deadline = new Promise<void>((resolve) => {
      // Kept alive: a process awaiting closeAndFlush() must not exit while a retry waits.
      timer = this.clock.setTimeout(
        () => {
          log('closeAndFlush: %d messages still pending after %d ms', this.held, timeout);
          resolve();
        },
        timeout,
        true,
      );
    });
    this.closing = Promise.race([this.settled(), deadline]).then(() => {
      this.clock.clearTimeout(timer);
      if (this.held === 0) this.transport.close?.();
    });
    return this.closing;
  }

  private enqueue(type: MessageType, params: unknown, callback: Callback | undefined): void {
    if (this.closing) return this.refuse(new ClientClosedError(), undefined, callback);
    const invalid = validateParams(type, params);
    if (invalid) return this.refuse(invalid, undefined, callback);

    const message = buildMessage(type, params as Record<string, unknown>, this.clock.now());
    const id = message.messageId as string;
    let json: string;
    try {
      json = serializeMessage(message);
    } catch (error) {
      return this.refuse(error as SerializationError, id, callback);
    }
    const bytes = Buffer.byteLength(json);
    if (bytes > MAX_MESSAGE_BYTES) {
      const error = new PayloadTooLargeError(
        `The ${type} message is ${bytes} bytes once serialized; the limit is ${MAX_MESSAGE_BYTES} bytes (32 KB) per call. ` +
          'Send fewer or smaller properties.',
        bytes,
        MAX_MESSAGE_BYTES,
      );
      return this.refuse(error, id, callback);
    }
    if (this.held >= this.options.maxQueueSize) {
      return this.refuse(new QueueFullError(this.options.maxQueueSize), id, callback);
    }
    if (this.options.disable) {
      if (callback) queueMicrotask(() => this.callBack(callback, undefined, id));
      return;
    }

    this.held++;
    if (this.batch.tryAdd(json, bytes, id, callback) === 'full') {
      this.handOff('size');
      this.batch.tryAdd(json, bytes, id, callback);
    }
    if (this.batch.length >= this.options.flushAt) {
      this.handOff('count');
    } else if (this.batch.length === 1) {
      this.timer = this.clock.setTimeout(() => {
        this.timer = undefined;
        this.handOff('interval');
      }, this.options.flushInterval);
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
    // Two-argument then: `finish` runs once whichever way the send settles.
    const job = this.queue.add(() => this.send(batch)).then(
      (error) => this.finish(batch, error),
      (error: unknown) => this.finish(batch, asEventRelayError(error)),
    );
    this.inFlight.add(job);
    void job.finally(() => this.inFlight.delete(job));
  }

  private async send(batch: Batch): Promise<EventRelayError | undefined> {
    const started = this.clock.now();
    const text = batch.body(new Date(started));
    const body = this.options.gzip ? await gzip(text) : text;
    const error = await sendWithRetries(
      { url: this.options.url, headers: this.headers, body, timeout: this.options.timeout },
      {
        transport: this.transport,
        clock: this.clock,
        random: this.random,
        policy: this.options,
        onRetry: (attempt, delay, cause) =>
          log('retry %d of a batch of %d in %d ms after %s', attempt, batch.length, delay, cause.message),
      },
    );
    if (log.enabled) {
      const outcome = error ? `failed: ${error.message}` : 'delivered';
      log('batch of %d messages %s in %d ms', batch.length, outcome, this.clock.now() - started);
    }
    return error;
  }

  private finish(batch: Batch, error: EventRelayError | undefined): void {
    this.held -= batch.length;
    if (error) this.report(error, undefined);
    for (const { id, callback } of batch.callbacks) this.callBack(callback, error, id);
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

  private refuse(error: EventRelayError, id: string | undefined, callback: Callback | undefined): void {
    log('refused a message: %s', error.message);
    if (callback) queueMicrotask(() => this.callBack(callback, error, id));
    this.report(error, id);
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

  private report(error: EventRelayError, id: string | undefined): void {
    if (this.listenerCount('error') > 0) {
      try {
        this.emit('error', error, id);
      } catch (thrown) {
        log('an error listener threw: %s', thrown instanceof Error ? thrown.message : String(thrown));
      }
    }
  }
}

function asEventRelayError(error: unknown): EventRelayError {
  return error instanceof EventRelayError
    ? error
    : new EventRelayError(`Unexpected failure while sending a batch: ${String(error)}`, 'ERR_INTERNAL', { cause: error });
}
