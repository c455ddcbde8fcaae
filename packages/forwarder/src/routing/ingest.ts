import { randomUUID } from 'node:crypto';
import { SerializationError } from 'eventrelay/internal';
import { describeValue, isPlainObject, showValue } from 'eventrelay/internal';
import { MESSAGE_TYPES } from 'eventrelay/internal';
import type { MessageType } from 'eventrelay/internal';
import { eventTimestamp } from 'eventrelay/internal';
import type { EventTimeOptions } from 'eventrelay/internal';
import { MAX_MESSAGE_BYTES } from 'eventrelay/internal';
import { checkMessage } from 'eventrelay/internal';
import { buildWebhookMessage, serializeWebhookMessage } from 'eventrelay/internal';
import type { InboundMessage, JsonObject, TraceFields, WebhookMessage } from 'eventrelay/internal';

export { MESSAGE_TYPES };
export type { MessageType };

/** One refused message of a batch, as listed in the answer's `rejected`. */
export interface RejectedMessage {
  /** Position in `batch` (0 for the single-message endpoints). */
  readonly index: number;
  /** `invalid_message` (a rule of spec 2.4, see `field`) or `message_too_large` (over 32 KB). */
  readonly code: 'invalid_message' | 'message_too_large';
  /** The field at fault, when there is one. */
  readonly field?: string;
  readonly message: string;
  /** For `message_too_large`: the message's size and the limit, in bytes. */
  readonly size?: number;
  readonly limit?: number;
}

/** Why a whole request body was refused: the HTTP status and the answer's `error` object. */
export interface IngestFailure {
  readonly ok: false;
  readonly status: 400;
  readonly code: 'invalid_body';
  readonly message: string;
}

/** A valid message, with its webhook form and that form's bytes (built once). */
export interface ValidMessage {
  readonly messageId: string;
  readonly type: MessageType;
  readonly integrations: unknown;
  readonly webhook: WebhookMessage;
  /** `webhook` serialized: the bytes every delivery attempt sends. */
  readonly body: string;
}

export interface IngestResult {
  readonly ok: true;
  readonly messages: readonly ValidMessage[];
  /** Refused messages, in batch order; empty when every message was valid. */
  readonly rejected: readonly RejectedMessage[];
}

export type IngestParse = IngestResult | IngestFailure;

interface BatchDefaults {
  readonly context?: unknown;
  readonly integrations?: unknown;
  /** The client's address: each message's `context.ip` when it has none. */
  readonly ip?: string;
  /** The batch's `sentAt` with the time of receipt: made once per request, read for each message. */
  readonly time: EventTimeOptions;
  /** The ingestion span's trace context, for the messages whose context has no `traceparent`. */
  readonly trace?: TraceFields;
}

/**
 * Checks the messages of a parsed request body, for `POST /v1/batch` (`endpoint` = 'batch') or
 * `POST /v1/{type}`, with the same rules the client applies (`src/messages/rules.ts`), and
 * builds their webhook form. A batch is not all or nothing: every valid message is kept and
 * each invalid one (a broken rule, over 32 KB, nested too deeply for JSON) is listed in
 * `rejected` by index. Only a body that is not an object with a `batch` array is refused whole.
 *
 * Segment-compatible details: a batch's top-level `context` and `integrations` are defaults for
 * each message; a missing `messageId` gets a random one; the event time is the message's
 * `timestamp`, else its `originalTimestamp` corrected for clock skew with the body's `sentAt`,
 * else the time of receipt (`eventTimeMs`); `context.ip` is the client's address (`ip`) when the
 * message has none. What the sender adds for the API alone (`writeKey`, `sentAt`, analytics.js's
 * `_metadata`) is never forwarded: the webhook message is built from the call's own fields.
 *
 * With `trace` (the ingestion span's, when the operator traces), a message whose context has no
 * `traceparent` gets that one (and its `tracestate`), so that its deliveries continue the trace.
 */
export function parseIngestBody(
  endpoint: 'batch' | MessageType,
  body: unknown,
  receivedAt: number,
  /** Size of the decoded request body; when it is within 32 KB no message can pass the limit. */
  bodyBytes = Number.POSITIVE_INFINITY,
  /** The client's IP address, for `context.ip`; undefined: not added. */
  ip?: string,
  trace?: TraceFields,
): IngestParse {
  if (!isPlainObject(body)) {
    return invalidBody(`Expected the request body to be a JSON object, got ${describeValue(body)}`);
  }
  let raw: unknown[];
  let defaults: BatchDefaults;
  if (endpoint === 'batch') {
    if (!Array.isArray(body.batch)) {
      return invalidBody(`Expected \`batch\` to be an array of messages, got ${describeValue(body.batch)}`);
    }
    raw = body.batch;
    const time = { receivedAt, sentAt: body.sentAt };
    defaults = { context: body.context, integrations: body.integrations, ip, time, ...(trace === undefined ? {} : { trace }) };
  } else {
    const { writeKey: _writeKey, sentAt, _metadata: _metadata, ...message } = body;
    if (message.type !== undefined && message.type !== endpoint) {
      return invalidBody(`The body's \`type\` (${showValue(message.type)}) does not match the endpoint /v1/${endpoint}`);
    }
    raw = [{ ...message, type: endpoint }];
    defaults = { ip, time: { receivedAt, sentAt }, ...(trace === undefined ? {} : { trace }) };
  }

  const messages: ValidMessage[] = [];
  const rejected: RejectedMessage[] = [];
  // Measuring a message means serializing it again: only worth it when the body could hold one too large.
  const measure = bodyBytes > MAX_MESSAGE_BYTES;
  for (let index = 0; index < raw.length; index++) {
    const value = raw[index];
    try {
      const result = checkOne(value, index, defaults, measure);
      if ('index' in result) rejected.push(result);
      else messages.push(result);
    } catch (error) {
      // JSON.stringify throws RangeError for a message nested thousands of levels deep: the
      // sender's mistake, refused like any invalid message, never a 5xx that invites retries.
      if (!(error instanceof RangeError) && !(error instanceof SerializationError)) throw error;
      rejected.push({ index, code: 'invalid_message', message: `Message ${index} cannot be turned into JSON: it is nested too deeply` });
    }
  }
  return { ok: true, messages, rejected };
}

function invalidBody(message: string): IngestFailure {
  return { ok: false, status: 400, code: 'invalid_body', message };
}

function checkOne(value: unknown, index: number, defaults: BatchDefaults, measure: boolean): ValidMessage | RejectedMessage {
  if (!isPlainObject(value)) {
    return { index, code: 'invalid_message', message: `Expected a message object, got ${describeValue(value)}` };
  }
  if (measure) {
    const size = Buffer.byteLength(JSON.stringify(value));
    if (size > MAX_MESSAGE_BYTES) {
      return {
        index,
        code: 'message_too_large',
        message: `Message ${index} is ${size} bytes; the limit is ${MAX_MESSAGE_BYTES} bytes (32 KB) per message`,
        size,
        limit: MAX_MESSAGE_BYTES,
      };
    }
  }
  const invalid = checkMessage(value);
  if (invalid !== undefined) {
    return invalid.field === undefined
      ? { index, code: 'invalid_message', message: invalid.message }
      : { index, code: 'invalid_message', field: invalid.field, message: invalid.message };
  }
  const messageId = typeof value.messageId === 'string' ? value.messageId : randomUUID();
  // The message is read as it came (never copied): its merged context and messageId go beside it.
  const integrations = mergeDefault(defaults.integrations, value.integrations);
  const timestamp = eventTimestamp(value, defaults.time);
  const context = withIp(mergeDefault(defaults.context, value.context), defaults.ip);
  const withTrace = defaults.trace === undefined ? context : traced(context, defaults.trace);
  const webhook = buildWebhookMessage(value as unknown as InboundMessage, timestamp, withTrace, messageId);
  return { messageId, type: value.type as MessageType, integrations, webhook, body: serializeWebhookMessage(webhook) };
}

/** `context` with `ip` when it has none (as Segment's API enriches calls); a new object, never the message's. */
function withIp(context: JsonObject | undefined, ip: string | undefined): JsonObject | undefined {
  if (ip === undefined || (context !== undefined && context.ip !== undefined)) return context;
  if (context === undefined) return { ip };
  // JSON makes `__proto__` an own key: a spread keeps it one, where Object.assign would set the
  // copy's prototype with it.
  if (Object.hasOwn(context, '__proto__')) return { ...context, ip };
  // Object.assign, then a plain store: V8 caches that shape change. Both `{ ...context, ip }` and a
  // store on a spread copy went through its slow path once per call (measured, issue 42).
  const copy: JsonObject = Object.assign({}, context);
  copy.ip = ip;
  return copy;
}

/** The context with the ingestion span's trace context, unless it has a `traceparent` of its own. */
function traced(context: JsonObject | undefined, trace: TraceFields): JsonObject {
  if (context !== undefined && context.traceparent !== undefined) return context;
  const { traceparent, tracestate } = trace;
  return tracestate === undefined ? { ...context, traceparent } : { ...context, traceparent, tracestate };
}

/** A batch-level object under the message's own keys; undefined when neither is an object. */
function mergeDefault(batchLevel: unknown, own: unknown): JsonObject | undefined {
  const base = isPlainObject(batchLevel) ? batchLevel : undefined;
  const mine = isPlainObject(own) ? own : undefined;
  if (base === undefined) return mine;
  return { ...base, ...mine };
}
