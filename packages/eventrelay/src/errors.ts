/**
 * Every error eventrelay raises or passes to a callback is an `EventRelayError`,
 * with a stable `code` to branch on and, when it wraps another failure, a `cause`.
 * Messages never contain write keys, shared secrets or message bodies.
 */

/**
 * Every `code` an eventrelay error can carry; docs/sdk-reference.md's Errors table lists each one with its
 * class. Codes are stable: branch on them (or on the class), never on the message.
 */
export type ErrorCode =
  // ConfigError, ValidationError, SerializationError, PayloadTooLargeError
  | 'ERR_CONFIG'
  | 'ERR_VALIDATION'
  | 'ERR_SERIALIZATION'
  | 'ERR_PAYLOAD_TOO_LARGE'
  // The client
  | 'ERR_QUEUE_FULL'
  | 'ERR_CLIENT_CLOSED'
  | 'ERR_CLOSE_TIMEOUT'
  | 'ERR_CALLBACK'
  | 'ERR_INTERNAL'
  // HTTP: HttpError, NetworkError and TimeoutError
  | 'ERR_HTTP'
  | 'ERR_NETWORK'
  | 'ERR_TLS_CERTIFICATE'
  | 'ERR_BODY_READ'
  | 'ERR_TIMEOUT'
  // The receiver helper
  | 'ERR_SIGNATURE'
  | 'ERR_WEBHOOK_TIMESTAMP'
  | 'ERR_WEBHOOK_MESSAGE'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_UNSUPPORTED_RUNTIME'
  // The forwarder
  | 'ERR_FORWARDER_CLOSED'
  | 'ERR_ALREADY_LISTENING'
  | 'ERR_STORE_LOCKED'
  | 'ERR_STORE_CLOSED'
  | 'ERR_STORE_UNAVAILABLE'
  | 'ERR_STORE_SCHEMA'
  | 'ERR_NOT_REPLAYABLE'
  | 'ERR_SOURCE_DELETED'
  | 'ERR_NETWORK_POLICY'
  | 'ERR_TRANSFORM'
  // eventrelay/segment
  | 'ERR_PLUGIN_CANCELLED'
  // The client's disk spool (SpoolError)
  | 'ERR_SPOOL_WRITE'
  | 'ERR_SPOOL_NOT_DURABLE'
  | 'ERR_SPOOL_CORRUPT'
  | 'ERR_SPOOL_VERSION';

/** Key of the static property that holds a class's brand, `Symbol.for('eventrelay.<ClassName>')`. */
const BRAND = Symbol.for('eventrelay.errorBrand');

/**
 * Gives `cls` its brand and marks its prototype with it, so that its instances and those of its
 * subclasses carry the mark whichever copy of this file made them.
 */
function brand(cls: abstract new (...args: never[]) => EventRelayError, name: string): void {
  const mark = Symbol.for(`eventrelay.${name}`);
  Object.defineProperty(cls, BRAND, { value: mark });
  Object.defineProperty(cls.prototype, mark, { value: true });
}

export class EventRelayError extends Error {
  readonly code: ErrorCode;

  constructor(message: string, code: ErrorCode, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }

  /**
   * `instanceof` that also holds across copies of eventrelay: the ESM and CommonJS builds loaded
   * side by side (`require('@eventrelay/forwarder')` beside `import ... from 'eventrelay'`), or
   * two installed versions. Each class checks its own brand, so the answer stays exact: a
   * `ConfigError` is an `EventRelayError`, never a `ValidationError`. A class without a brand of
   * its own (a subclass written outside eventrelay) gets the ordinary check.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== 'object' || value === null) return false;
    const mark: unknown = Object.getOwnPropertyDescriptor(this, BRAND)?.value;
    return typeof mark === 'symbol' && (value as Record<symbol, unknown>)[mark] === true;
  }

  static {
    brand(this, 'EventRelayError');
  }
}

/** An option or configuration value is missing or out of range. Thrown at construction. */
export class ConfigError extends EventRelayError {
  /** Dotted path of the offending field, e.g. `flushAt` or `sources[0].writeKey`. */
  readonly field: string | undefined;
  /**
   * Every problem, in order, when one check found several (the forwarder's config file: every
   * missing environment variable at once); `field` is then the first one's. Undefined for one.
   */
  readonly problems: readonly ConfigError[] | undefined;

  constructor(message: string, field?: string, problems?: readonly ConfigError[]) {
    super(message, 'ERR_CONFIG');
    this.field = field;
    this.problems = problems;
  }

  static {
    brand(this, 'ConfigError');
  }
}

/** A message breaks the rules of the spec (missing userId, event, groupId, ...). */
export class ValidationError extends EventRelayError {
  /** The field that failed, e.g. `userId` or `event`. */
  readonly field: string | undefined;

  constructor(message: string, field?: string, options?: { cause?: unknown }) {
    super(message, 'ERR_VALIDATION', options);
    this.field = field;
  }

  static {
    brand(this, 'ValidationError');
  }
}

/** A value in a message cannot be turned into JSON (circular reference, BigInt, a throwing toJSON). */
export class SerializationError extends EventRelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'ERR_SERIALIZATION', options);
  }

  static {
    brand(this, 'SerializationError');
  }
}

/** A message or a request body is larger than the limit that applies to it. */
export class PayloadTooLargeError extends EventRelayError {
  /** Size in bytes of what was refused. */
  readonly size: number;
  /** The limit in bytes. */
  readonly limit: number;

  constructor(message: string, size: number, limit: number) {
    super(message, 'ERR_PAYLOAD_TOO_LARGE');
    this.size = size;
    this.limit = limit;
  }

  static {
    brand(this, 'PayloadTooLargeError');
  }
}

/**
 * The in-memory queue holds `maxQueueSize` messages already, or the disk spool holds
 * `spool.maxBytes` bytes (then `maxBytes` is set); the new message was refused.
 */
export class QueueFullError extends EventRelayError {
  readonly maxQueueSize: number;
  /** The spool's `maxBytes`, when the spool is what is full. */
  readonly maxBytes: number | undefined;

  constructor(maxQueueSize: number, maxBytes?: number) {
    super(
      maxBytes === undefined
        ? `The queue already holds ${maxQueueSize} messages (maxQueueSize); the message was refused. ` +
        'The endpoint may be unreachable: check connectivity, or raise `maxQueueSize`.'
        : `The spool already holds ${maxBytes} bytes of messages (spool.maxBytes); the message was refused. ` +
          'The endpoint may be unreachable: check connectivity, or raise `spool.maxBytes`.',
      'ERR_QUEUE_FULL',
    );
    this.maxQueueSize = maxQueueSize;
    this.maxBytes = maxBytes;
  }

  static {
    brand(this, 'QueueFullError');
  }
}

/** The client was closed with `closeAndFlush()`; it takes no new calls. */
export class ClientClosedError extends EventRelayError {
  constructor() {
    super('The client is closed: closeAndFlush() was called, so new calls are refused. Create a new Analytics instance.', 'ERR_CLIENT_CLOSED');
  }

  static {
    brand(this, 'ClientClosedError');
  }
}

/**
 * `closeAndFlush({ timeout })` ran out of time before this message was confirmed delivered:
 * its callback gets this error and the client stops retrying it. It may or may not have arrived.
 */
export class CloseTimeoutError extends EventRelayError {
  /** The timeout that elapsed, in milliseconds. */
  readonly timeout: number;

  /**
   * `lastError`: why the last attempt at the message failed, when one did (a refused connection,
   * a 503, ...): named in the message and kept as `cause`.
   */
  constructor(timeout: number, lastError?: EventRelayError) {
    const last = lastError === undefined ? '' : ` (its last attempt failed: ${lastError.code}: ${lastError.message})`;
    const advice =
      lastError === undefined
        ? 'Give closeAndFlush a longer `timeout` to wait for retries.'
        : 'Fix that cause (the endpoint, the network, the write key), or give closeAndFlush a longer `timeout` to wait for retries.';
    super(
      `closeAndFlush() timed out after ${timeout} ms before this message was confirmed delivered${last}; it is no longer retried ` +
      `and may or may not have arrived. ${advice}`,
      'ERR_CLOSE_TIMEOUT',
      lastError === undefined ? undefined : { cause: lastError },
    );
    this.timeout = timeout;
  }

  static {
    brand(this, 'CloseTimeoutError');
  }
}

/** A server answered with a status that is not 2xx. */
export class HttpError extends EventRelayError {
  readonly status: number;
  /** Whether the same request may succeed later (5xx, 429, 408). */
  readonly retryable: boolean;
  /** Delay the server asked for with `Retry-After`, in milliseconds, when it sent one. */
  readonly retryAfter: number | undefined;

  constructor(message: string, status: number, retryable: boolean, retryAfter?: number) {
    super(message, 'ERR_HTTP');
    this.status = status;
    this.retryable = retryable;
    this.retryAfter = retryAfter;
  }

  static {
    brand(this, 'HttpError');
  }
}

/** The request did not get an answer: connection refused or reset, DNS failure, TLS failure. */
export class NetworkError extends EventRelayError {
  /** Whether trying again may help. TLS certificate failures are not retryable. */
  readonly retryable: boolean;

  constructor(message: string, options?: { cause?: unknown; code?: 'ERR_NETWORK' | 'ERR_TLS_CERTIFICATE' | 'ERR_BODY_READ' | 'ERR_TIMEOUT' | 'ERR_NETWORK_POLICY'; retryable?: boolean }) {
    super(message, options?.code ?? 'ERR_NETWORK', options);
    this.retryable = options?.retryable ?? true;
  }

  static {
    brand(this, 'NetworkError');
  }
}

/** The server did not answer within the timeout. Retryable. */
export class TimeoutError extends NetworkError {
  /** The timeout that elapsed, in milliseconds. */
  readonly timeout: number;

  constructor(timeout: number, options?: { cause?: unknown }) {
    super(`No response within ${timeout} ms`, { ...options, code: 'ERR_TIMEOUT', retryable: true });
    this.timeout = timeout;
  }

  static {
    brand(this, 'TimeoutError');
  }
}

/** A webhook signature did not match, or no signature was sent. */
export class SignatureVerificationError extends EventRelayError {
  constructor(message = 'The X-Signature header is missing or does not match the request body.', code: 'ERR_SIGNATURE' | 'ERR_WEBHOOK_TIMESTAMP' = 'ERR_SIGNATURE') {
    super(message, code);
  }

  static {
    brand(this, 'SignatureVerificationError');
  }
}

/**
 * A Standard Webhooks request whose signature matched but whose `webhook-timestamp` lies
 * further from now than the receiver's tolerance: a replay of a captured request, or a clock
 * that is off on one side. Answered 401 like any other signature failure.
 */
export class WebhookTimestampError extends SignatureVerificationError {
  /** The request's `webhook-timestamp`, in unix seconds. */
  readonly timestamp: number;
  /** The tolerance that was exceeded, in milliseconds. */
  readonly tolerance: number;

  constructor(timestamp: number, now: number, tolerance: number) {
    const skew = Math.round(timestamp - now / 1000);
    super(
      `The webhook-timestamp is ${Math.abs(skew)} s ${skew < 0 ? 'in the past' : 'in the future'}, outside the tolerance of ` +
      `${tolerance / 1000} s: a replayed request, or a clock that is off on the sender or the receiver (check NTP).`,
      'ERR_WEBHOOK_TIMESTAMP',
    );
    this.timestamp = timestamp;
    this.tolerance = tolerance;
  }

  static {
    brand(this, 'WebhookTimestampError');
  }
}

/** A webhook body is not one of the seven message types of the spec. */
export class WebhookMessageError extends EventRelayError {
  /** The field that failed, when one did. */
  readonly field: string | undefined;

  constructor(message: string, field?: string, options?: { cause?: unknown }) {
    super(message, 'ERR_WEBHOOK_MESSAGE', options);
    this.field = field;
  }

  static {
    brand(this, 'WebhookMessageError');
  }
}

/**
 * A function was called with an argument it cannot use: a programming mistake, such as
 * passing a parsed JSON object where the raw request body is needed. Fix the call site.
 */
export class InvalidArgumentError extends EventRelayError {
  /** The name of the argument, e.g. `rawBody`. */
  readonly argument: string;

  constructor(message: string, argument: string) {
    super(message, 'ERR_INVALID_ARGUMENT');
    this.argument = argument;
  }

  static {
    brand(this, 'InvalidArgumentError');
  }
}

/**
 * The forwarder's store cannot be used: another forwarder holds the SQLite data directory
 * (`ERR_STORE_LOCKED`), the store was closed (`ERR_STORE_CLOSED`), the database cannot be
 * reached (`ERR_STORE_UNAVAILABLE`, with the config `field`), or its schema is newer than this
 * release (`ERR_STORE_SCHEMA`). Messages never show a database password.
 */
export class StoreError extends EventRelayError {
  /** The config field to look at, e.g. `storage.url`, when one applies. */
  readonly field: string | undefined;

  constructor(
    message: string,
    code: 'ERR_STORE_LOCKED' | 'ERR_STORE_CLOSED' | 'ERR_STORE_UNAVAILABLE' | 'ERR_STORE_SCHEMA',
    options?: { cause?: unknown; field?: string },
  ) {
    super(message, code, options);
    this.field = options?.field;
  }

  static {
    brand(this, 'StoreError');
  }
}

/**
 * A forwarder delivery cannot be replayed as asked: it is still queued, nothing was to be
 * delivered, or its body is no longer stored. The admin API answers 409 with the message.
 */
export class NotReplayableError extends EventRelayError {
  constructor(message: string) {
    super(message, 'ERR_NOT_REPLAYABLE');
  }

  static {
    brand(this, 'NotReplayableError');
  }
}

/**
 * The client's disk spool could not do its work: a write failed (`ERR_SPOOL_WRITE`: the disk is
 * full, read-only or failing; a call that could not be written is refused), a call was kept in
 * memory only (`ERR_SPOOL_NOT_DURABLE`, with `onWriteError: 'memory'`: it is still sent), a file
 * could not be read as the spool's (`ERR_SPOOL_CORRUPT`: bytes of records, skipped, the other
 * records sent; or a lock that is not one, its files taken over), or a file was written by a newer
 * format version (`ERR_SPOOL_VERSION`: left untouched).
 * Reported through the client's `error` event.
 */
export class SpoolError extends EventRelayError {
  /** The spool file concerned. */
  readonly file: string;
  /** Where in the file, in bytes, when it concerns a place in it. */
  readonly offset: number | undefined;

  constructor(
    message: string,
    code: 'ERR_SPOOL_WRITE' | 'ERR_SPOOL_NOT_DURABLE' | 'ERR_SPOOL_CORRUPT' | 'ERR_SPOOL_VERSION',
    options: { file: string; offset?: number; cause?: unknown },
  ) {
    super(message, code, { cause: options.cause });
    this.file = options.file;
    this.offset = options.offset;
  }

  static {
    brand(this, 'SpoolError');
  }
}
