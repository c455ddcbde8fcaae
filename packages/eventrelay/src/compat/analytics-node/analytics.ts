import createDebug from 'debug';
import { Analytics as Client } from '../../client/analytics';
import { ConfigError, EventRelayError, SpoolError } from '../../errors';
import type { SpoolOptions } from '../../client/spool/options';
import { isPlainObject, showValue } from '../../internal/values';
import type { MessageType } from '../../messages/calls';
import type { Transport } from '../../transport/transport';
import { emitWarning, warnAboutOptions, type OptionCatalog } from '../warnings';
import { AxiosTransport, type AxiosLike } from './axios-transport';

const log = createDebug('analytics');

/** The classic SDK's own defaults (`analytics-node` 6), kept so that moving over changes nothing. */
export const CLASSIC_DEFAULTS = {
  host: 'https://api.segment.io',
  path: '/v1/batch',
  flushAt: 20,
  flushInterval: 10_000,
  retryCount: 3,
} as const;

/** eventrelay's request timeout where the classic SDK had none. */
const DEFAULT_TIMEOUT_MS = 10_000;

/** The options of `analytics-node` 6, plus eventrelay's few extras. */
export interface AnalyticsNodeOptions {
  /** Messages per batch. Default 20; values below 1 become 1. */
  flushAt?: number;
  /** Milliseconds after the first queued message before the batch is sent. Default 10000. */
  flushInterval?: number;
  /** Base URL. Default `https://api.segment.io` (Segment's); set it to your forwarder. */
  host?: string;
  /** Path of the batch API. Default `/v1/batch`. */
  path?: string;
  /** `false` turns the client off: nothing is sent, callbacks are called. Default true. */
  enable?: boolean;
  /** Request timeout: milliseconds, or a string such as `"5s"` or `"500ms"`. Default 10000 (eventrelay's; the classic SDK had none). */
  timeout?: number | string;
  /** Retries of one batch. Default 3. */
  retryCount?: number;
  /** Called with the error of every failed batch (and refused call); then `flush()` does not reject. */
  errorHandler?: (error: Error) => unknown;
  /** Your axios instance (proxies, agents, interceptors): requests go through its `post`, with eventrelay's retry policy. */
  axiosInstance?: AxiosLike;
  /** eventrelay extra: the `Transport` to send with (tests, proxies). */
  transport?: Transport;
  /** eventrelay extra: batches in flight at once. Default 4. */
  concurrency?: number;
  /** eventrelay extra: delay before the first retry, in ms. Default 100. */
  minRetryDelay?: number;
  /** eventrelay extra: largest delay between retries, in ms. Default 30000. */
  maxRetryDelay?: number;
  /** eventrelay extra: keep accepted calls in files in `dir` until delivered (see docs/spool.md); its errors go to `errorHandler`. */
  spool?: SpoolOptions;
}

/** The message a call makes, as the classic SDK builds it (a copy: the caller's object is not changed). */
export type ClassicMessage = Record<string, unknown> & { type: MessageType; messageId: string; timestamp?: Date | string };

/** What callbacks and `flush()` get: the classic SDK's `{ batch, timestamp, sentAt }`. */
export interface FlushData {
  batch: ClassicMessage[];
  timestamp: Date;
  sentAt: Date;
}

export type ClassicCallback = (err?: Error, data?: FlushData) => void;

const CATALOG: OptionCatalog = {
  layer: 'eventrelay/analytics-node',
  known: new Set([
    'flushAt',
    'flushInterval',
    'host',
    'path',
    'enable',
    'timeout',
    'retryCount',
    'errorHandler',
    'transport',
    'concurrency',
    'minRetryDelay',
    'maxRetryDelay',
    'axiosInstance',
    'spool',
  ]),
  unsupported: {
    maxQueueSize: 'eventrelay sends a batch before it passes 500 KB by itself',
    axiosConfig: 'eventrelay makes no axios instance of its own; pass `axiosInstance: axios.create(config)` or a `transport`',
    axiosRetryConfig: "retries follow eventrelay's policy: `retryCount`, `minRetryDelay`, `maxRetryDelay`",
  },
};

interface Pending {
  readonly type: MessageType;
  /** What went to the client: the caller's object, or a copy with its ids made strings. */
  readonly params: unknown;
  messageId?: string | undefined;
  error?: Error;
}

/** The message as the classic SDK showed it in `data.batch`: the caller's fields with `type` and `messageId`. */
function messageOf(entry: Pending): ClassicMessage {
  const base = { type: entry.type, messageId: entry.messageId ?? '' };
  try {
    const fields = isPlainObject(entry.params) ? entry.params : {};
    return { ...fields, ...base } as ClassicMessage;
  } catch {
    // A Proxy or a throwing getter: the call was refused; its type and id are what is known.
    return base;
  }
}

function needsString(value: unknown): boolean {
  return value !== undefined && value !== null && typeof value !== 'string';
}

/** `ms`-style durations of the classic `timeout` option: `500`, `"500ms"`, `"5s"`, `"1m"`, `"1h"`. */
export function parseDuration(value: number | string): number {
  if (typeof value === 'number') return value;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|msecs?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)?\s*$/i.exec(value);
  if (!match) throw new ConfigError(`Expected \`timeout\` in milliseconds or as a duration such as "5s", got ${showValue(value)}`, 'timeout');
  const unit = (match[2] ?? 'ms').toLowerCase();
  const factor = unit.startsWith('ms') ? 1 : unit.startsWith('s') ? 1000 : unit.startsWith('m') ? 60_000 : 3_600_000;
  return Math.round(Number(match[1]) * factor);
}

/** The classic SDK accepted numbers (and String objects) as ids and sent them as strings. */
function asId(value: unknown): unknown {
  if (value instanceof String) return value.valueOf();
  if (typeof value === 'number' && value) return JSON.stringify(value);
  return value;
}

/**
 * The public API of the classic `analytics-node` 6 on eventrelay's engine:
 * `new Analytics(writeKey, options)`, chainable calls with `(message, callback)`,
 * `flush(callback)` returning a promise, `enable`, `errorHandler`, `flushed`. A call never
 * throws: a bad one gets a typed error in its callback (and `errorHandler`).
 */
export class Analytics {
  static {
    // The bundle renames the class beside eventrelay's own `Analytics`; users see this name in logs.
    Object.defineProperty(this, 'name', { value: 'Analytics' });
  }

  readonly writeKey: string;
  readonly host: string;
  readonly path: string;
  readonly flushAt: number;
  readonly flushInterval: number;
  /** Request timeout in milliseconds. */
  readonly timeout: number;
  declare readonly enable: boolean;
  errorHandler: ((error: Error) => unknown) | undefined;
  /** False until the first call, which is sent at once (as the classic SDK does). */
  flushed = false;
  private readonly client: Client;
  /** Calls accepted and not finished, for `flush()`'s answer. */
  private readonly pending = new Set<Pending>();
  private lastReported: unknown;

  constructor(writeKey: string, optionsOrNothing?: AnalyticsNodeOptions | null) {
    if (!writeKey) throw new ConfigError("You must pass your project's write key: new Analytics(writeKey, options)", 'writeKey');
    const options = optionsOrNothing ?? {};
    if (typeof options !== 'object') throw new ConfigError('Expected `options` to be an object, e.g. { host, flushAt }', 'options');
    warnAboutOptions(options, CATALOG);
    const axios = options.axiosInstance;
    if (axios !== undefined && axios !== null && typeof (axios as { post?: unknown }).post !== 'function') {
      throw new ConfigError('Expected `axiosInstance` to be an axios instance (an object with a `post` method), e.g. axios.create({ proxy })', 'axiosInstance');
    }
    this.writeKey = writeKey;
    this.host = (options.host || CLASSIC_DEFAULTS.host).replace(/\/+$/, '');
    this.path = (options.path || CLASSIC_DEFAULTS.path).replace(/\/+$/, '');
    this.flushAt = Math.max(options.flushAt as number, 1) || CLASSIC_DEFAULTS.flushAt;
    this.flushInterval = options.flushInterval || CLASSIC_DEFAULTS.flushInterval;
    this.timeout = options.timeout ? parseDuration(options.timeout) : DEFAULT_TIMEOUT_MS;
    this.errorHandler = options.errorHandler;
    Object.defineProperty(this, 'enable', {
      configurable: false,
      writable: false,
      enumerable: true,
      value: typeof options.enable === 'boolean' ? options.enable : true,
    });
    this.client = new Client({
      writeKey,
      endpoint: this.host,
      path: this.path,
      flushAt: this.flushAt,
      flushInterval: this.flushInterval,
      timeout: this.timeout,
      maxRetries: options.retryCount ?? CLASSIC_DEFAULTS.retryCount,
      disable: !this.enable,
      transport: options.axiosInstance !== undefined && options.axiosInstance !== null ? new AxiosTransport(options.axiosInstance) : options.transport,
      concurrency: options.concurrency,
      minRetryDelay: options.minRetryDelay,
      maxRetryDelay: options.maxRetryDelay,
      spool: options.spool,
    });
    // What the disk spool could not do reaches errorHandler, as the classic SDK's failures do.
    this.client.on('error', (error) => {
      if (error instanceof SpoolError) this.report(error);
    });
  }

  identify(message: Record<string, unknown>, callback?: ClassicCallback): this {
    return this.enqueue('identify', message, callback);
  }

  group(message: Record<string, unknown>, callback?: ClassicCallback): this {
    return this.enqueue('group', message, callback);
  }

  track(message: Record<string, unknown>, callback?: ClassicCallback): this {
    return this.enqueue('track', message, callback);
  }

  page(message: Record<string, unknown>, callback?: ClassicCallback): this {
    return this.enqueue('page', message, callback);
  }

  screen(message: Record<string, unknown>, callback?: ClassicCallback): this {
    return this.enqueue('screen', message, callback);
  }

  alias(message: Record<string, unknown>, callback?: ClassicCallback): this {
    return this.enqueue('alias', message, callback);
  }

  /**
   * Sends everything queued. Resolves with `{ batch, timestamp, sentAt }` (the messages that
   * were pending) when all of them are finished. When one was not delivered it rejects with that error,
   * unless an `errorHandler` is set (it already got the error) or a `callback` is given (it
   * gets the error).
   */
  async flush(callback?: ClassicCallback): Promise<FlushData | undefined> {
    const entries = [...this.pending.values()];
    const timestamp = new Date();
    await this.client.flush();
    const data: FlushData = { batch: entries.map(messageOf), timestamp, sentAt: timestamp };
    const failed = entries.find((e) => e.error !== undefined)?.error;
    if (callback) {
      try {
        callback(failed, data);
      } catch (thrown) {
        log('a flush callback threw: %s', thrown instanceof Error ? thrown.message : String(thrown));
      }
      return data;
    }
    if (failed && typeof this.errorHandler !== 'function') throw failed;
    return data;
  }

  private enqueue(type: MessageType, params: unknown, callback: ClassicCallback | undefined): this {
    let sent = params;
    try {
      if (isPlainObject(params) && (needsString(params.userId) || needsString(params.anonymousId))) {
        const { userId, anonymousId } = params;
        sent = { ...params, userId: userId ? asId(userId) : userId, anonymousId: anonymousId ? asId(anonymousId) : anonymousId };
      }
    } catch {
      // A throwing getter or a Proxy: the client reads the object again and refuses it with a typed error.
    }
    const entry: Pending = { type, params: sent };
    const held = this.client.pending;
    this.client[type](sent as never, (error, messageId) => this.done(entry, callback, error, messageId));
    // Only accepted calls wait for `flush()`; a refused one is reported at once (callback, errorHandler).
    if (this.client.pending > held) this.pending.add(entry);
    if (!this.flushed) {
      this.flushed = true;
      void this.client.flush();
    }
    return this;
  }

  private done(entry: Pending, callback: ClassicCallback | undefined, error: EventRelayError | undefined, messageId: string | undefined): void {
    this.pending.delete(entry);
    entry.messageId = messageId;
    if (error) {
      entry.error = error;
      this.report(error);
    }
    if (!callback) return;
    const now = new Date();
    try {
      callback(error, { batch: [messageOf(entry)], timestamp: now, sentAt: now });
    } catch (thrown) {
      log('a callback threw: %s', thrown instanceof Error ? thrown.message : String(thrown));
    }
  }

  /** Each failure once (a batch's messages share one error): to `errorHandler`, or else a process warning. */
  private report(error: EventRelayError): void {
    if (error === this.lastReported) return;
    this.lastReported = error;
    log('failed: %s', error.message);
    if (typeof this.errorHandler === 'function') {
      try {
        void Promise.resolve(this.errorHandler(error)).catch((thrown: unknown) => log('errorHandler rejected: %s', String(thrown)));
      } catch (thrown) {
        log('errorHandler threw: %s', thrown instanceof Error ? thrown.message : String(thrown));
      }
    } else {
      emitWarning(`eventrelay/analytics-node: ${error.message} (set \`errorHandler\` to handle failures)`, error.code);
    }
  }
}
