import { randomUUID } from 'node:crypto';
import { WebhookMessageError } from '../../errors';
import { MAX_MESSAGE_BYTES } from '../../messages/limits';
import { toWebhookMessage } from '../../messages/webhook';
import type { InboundMessage, WebhookMessage } from '../../messages/webhook';

export const MESSAGE_TYPES = ['identify', 'track', 'page', 'screen', 'group', 'alias'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

/** Invalid messages listed in a 400 answer, at most. */
const MAX_LISTED_ERRORS = 20;

/** One refused message of a request. */
export interface MessageProblem {
  /** Position in `batch` (0 for the single-message endpoints). */
  readonly index: number;
  /** The field at fault, when there is one. */
  readonly field?: string;
  readonly message: string;
}

/** Why a request body was refused: the HTTP status and the answer's `error` object. */
export interface IngestFailure {
  readonly ok: false;
  readonly status: 400 | 413;
  readonly code: 'invalid_body' | 'invalid_message' | 'message_too_large';
  readonly message: string;
  readonly errors?: readonly MessageProblem[];
}

/** A valid message, with its webhook form already built (built once, validated by it). */
export interface ValidMessage {
  readonly messageId: string;
  readonly type: MessageType;
  readonly integrations: unknown;
  readonly webhook: WebhookMessage;
}

export type IngestParse = { readonly ok: true; readonly messages: readonly ValidMessage[] } | IngestFailure;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'undefined' ? 'nothing' : `a ${typeof value}`;
}

/**
 * Checks the messages of a parsed request body, for `POST /v1/batch` (`endpoint` = 'batch') or
 * `POST /v1/{type}`, and builds their webhook form. The whole request is refused when any
 * message is invalid (all-or-nothing, so a client's retry never sends half a batch twice);
 * the answer lists the invalid ones by index.
 *
 * Segment-compatible details: a batch's top-level `context` and `integrations` are defaults for
 * each message; a missing `messageId` gets a random one; a missing `timestamp` becomes the
 * time of receipt (spec 4.4) and a given one is kept (historical import).
 */
export function parseIngestBody(
  endpoint: 'batch' | MessageType,
  body: unknown,
  receivedAt: number,
  /** Size of the decoded request body; when it is within 32 KB no message can pass the limit. */
  bodyBytes = Number.POSITIVE_INFINITY,
): IngestParse {
  if (!isObject(body)) {
    return invalidBody(`Expected the request body to be a JSON object, got ${kind(body)}`);
  }
  let raw: unknown[];
  let defaults: { context?: unknown; integrations?: unknown } = {};
  if (endpoint === 'batch') {
    if (!Array.isArray(body.batch)) {
      return invalidBody(`Expected \`batch\` to be an array of messages, got ${kind(body.batch)}`);
    }
    raw = body.batch;
    defaults = { context: body.context, integrations: body.integrations };
  } else {
    const { writeKey: _writeKey, sentAt: _sentAt, ...message } = body;
    if (message.type !== undefined && message.type !== endpoint) {
      return invalidBody(`The body's \`type\` (${JSON.stringify(message.type)}) does not match the endpoint /v1/${endpoint}`);
    }
    raw = [{ ...message, type: endpoint }];
  }

  const messages: ValidMessage[] = [];
  const problems: MessageProblem[] = [];
  let tooLarge: MessageProblem | undefined;
  raw.forEach((value, index) => {
    // Measuring a message means serializing it again: only worth it when the body could hold one too large.
    const size = bodyBytes > MAX_MESSAGE_BYTES && isObject(value) ? Buffer.byteLength(JSON.stringify(value)) : 0;
    if (size > MAX_MESSAGE_BYTES) {
      tooLarge ??= { index, message: `Message ${index} is ${size} bytes; the limit is ${MAX_MESSAGE_BYTES} bytes (32 KB) per message` };
      return;
    }
    const result = checkMessage(value, index, defaults, receivedAt);
    if ('problem' in result) problems.push(result.problem);
    else messages.push(result.message);
  });

  if (tooLarge !== undefined) {
    return { ok: false, status: 413, code: 'message_too_large', message: tooLarge.message, errors: [tooLarge] };
  }
  if (problems.length > 0) {
    const first = problems[0]!;
    return {
      ok: false,
      status: 400,
      code: 'invalid_message',
      message: `${problems.length} of ${raw.length} messages invalid; nothing was accepted. First: message ${first.index}: ${first.message}`,
      errors: problems.slice(0, MAX_LISTED_ERRORS),
    };
  }
  return { ok: true, messages };
}

function invalidBody(message: string): IngestFailure {
  return { ok: false, status: 400, code: 'invalid_body', message };
}

function checkMessage(
  value: unknown,
  index: number,
  defaults: { context?: unknown; integrations?: unknown },
  receivedAt: number,
): { message: ValidMessage } | { problem: MessageProblem } {
  const fail = (message: string, field?: string) => ({ problem: field === undefined ? { index, message } : { index, field, message } });
  if (!isObject(value)) return fail(`Expected a message object, got ${kind(value)}`);
  const type = value.type;
  if (typeof type !== 'string' || !(MESSAGE_TYPES as readonly string[]).includes(type)) {
    return fail(`Expected \`type\` to be one of ${MESSAGE_TYPES.join(', ')}, got ${typeof type === 'string' ? JSON.stringify(type.slice(0, 40)) : kind(type)}`, 'type');
  }
  if (value.messageId !== undefined && (typeof value.messageId !== 'string' || value.messageId === '' || value.messageId.length > 200)) {
    return fail(`Expected \`messageId\` to be a non-empty string of at most 200 characters, got ${kind(value.messageId)}`, 'messageId');
  }
  for (const field of ['integrations', 'context'] as const) {
    if (value[field] !== undefined && value[field] !== null && !isObject(value[field])) {
      return fail(`Expected \`${field}\` to be an object, got ${kind(value[field])}`, field);
    }
  }
  if (type !== 'alias' && !isId(value.userId) && !isId(value.anonymousId)) {
    // Spec 2.4: every call but alias needs a userId or an anonymousId.
    return fail(`A ${type} message needs \`userId\` or \`anonymousId\` (a non-empty string); neither was given`, 'userId');
  }
  const message: InboundMessage = {
    ...(value as unknown as InboundMessage),
    context: mergeDefault(defaults.context, value.context),
    integrations: mergeDefault(defaults.integrations, value.integrations),
    messageId: (value.messageId as string | undefined) ?? randomUUID(),
  };
  let webhook: WebhookMessage;
  try {
    webhook = toWebhookMessage(message, { receivedAt });
  } catch (error) {
    if (error instanceof WebhookMessageError) return fail(error.message, error.field);
    throw error;
  }
  return { message: { messageId: message.messageId!, type: type as MessageType, integrations: message.integrations, webhook } };
}

function isId(value: unknown): boolean {
  return (typeof value === 'string' && value !== '') || (typeof value === 'number' && Number.isFinite(value));
}

/** A batch-level object under the message's own keys; undefined when neither is an object. */
function mergeDefault(batchLevel: unknown, own: unknown): Record<string, unknown> | undefined {
  const base = isObject(batchLevel) ? batchLevel : undefined;
  const mine = isObject(own) ? own : undefined;
  if (base === undefined) return mine;
  return { ...base, ...mine };
}
