import createDebug from 'debug';
import { systemClock } from 'eventrelay/internal';
import type { Clock, TimerHandle } from 'eventrelay/internal';
import { EventRelayError, HttpError } from 'eventrelay/internal';
import { parseRetryAfter } from 'eventrelay/internal';
import { toNetworkError } from 'eventrelay/internal';
import { resolveDestinationOptions } from './options';
import type { ResolvedDestinationOptions, ResolvedWebhook, WebhookDestinationOptions } from './options';
import { UndiciTransport } from './undici-transport';
import type { WebhookRequest, WebhookResponse } from './undici-transport';
import { RESPONSE_BYTES } from '../store/delivery-log';
import type { Transport } from 'eventrelay/internal';
import { nextAttemptAt } from './retry-schedule';
import { bodyId, signBody, signingKey, signStandard, standardSigningKey } from './signing';
import type { KeyObject } from 'node:crypto';
import { serializeWebhookMessage } from 'eventrelay/internal';
import type { WebhookMessage } from 'eventrelay/internal';
import { describeType } from 'eventrelay/internal';
import { RateGate } from './rate-limit';
import type { Room } from './rate-limit';
import type { RateBudget } from '../store/contract';
import { MemoryRateBudget } from '../store/rate-budget';
import { attemptTracing, startAttempt } from '../tracing';
import type { AttemptTracing } from '../tracing';
import type { TraceFields } from 'eventrelay/internal';
import { messageKind } from '../schema-rules';
import type { MessageKind } from '../schema-rules';
import { UrlTransforms } from '../transform/urls';
import type { Transformed } from '../transform/urls';
import { TransformFailedError } from '../transform/errors';
import type { BatchSettings } from '../batch-body';

export type { SigningScheme } from '../store/contract';
export type { WebhookEntry, WebhookDestinationOptions } from './options';

const log = createDebug('eventrelay:delivery');

/** Seams for tests and embedding services; not needed by application code. */
export interface DestinationInternals {
  /** Time source and timers for retries. Default: the system clock, unref'd timers. */
  readonly clock?: Clock;
  /** Random source in [0, 1) for retry jitter. Default `Math.random`. */
  readonly random?: () => number;
  /**
   * Where the send slots of rate-limited URLs come from. Default: this destination's own, in
   * memory. The forwarder passes one shared by its destinations (and, on PostgreSQL, by its instances).
   */
  readonly rateBudget?: RateBudget;
  /** Prefix of the rate budget's keys (the forwarder's source name), so that equal URLs of two sources count apart. */
  readonly rateScope?: string;
  /** Called when rate-limit slots arrived, so that a scheduler may start attempts for them. */
  readonly onRateSlots?: () => void;
}

/** What one URL did in one attempt. */
export interface UrlOutcome {
  /** The URL without credentials or query. */
  readonly url: string;
  /** Position of the URL in `webhooks`. */
  readonly index: number;
  /** HTTP status, when the receiver answered. */
  readonly status?: number;
  /** Why this URL did not accept the message (absent on 2xx). */
  readonly error?: EventRelayError;
  /** Whether this failure alone would justify another attempt: any answer but 410, a timeout, a network error. */
  readonly retryable: boolean;
  /** Wall time of the request until its answer (the status line and the body's first 2,048 bytes, or its end), in milliseconds. */
  readonly durationMs: number;
  /**
   * The first bytes of the answer's body (at most `RESPONSE_BYTES`, 2,048), undecoded; absent
   * when there was no answer or it had no body, or the transport does not keep them (only the
   * built-in `UndiciTransport` does).
   */
  readonly response?: Uint8Array;
}

export type AttemptResult =
  | { readonly status: 'delivered'; readonly url: string; readonly attempt: number; readonly outcomes: readonly UrlOutcome[] }
  | { readonly status: 'retry'; readonly attempt: number; readonly nextAttemptAt: number; readonly outcomes: readonly UrlOutcome[] }
  | { readonly status: 'failed'; readonly attempt: number; readonly reason: string; readonly outcomes: readonly UrlOutcome[] };

export type DeliveryResult = Exclude<AttemptResult, { status: 'retry' }>;

export interface AttemptState {
  /** 1 for the first try. */
  readonly attempt: number;
  /** When the first try started, epoch ms: the retry window counts from here. */
  readonly firstAttemptAt: number;
  /**
   * `webhook-id` under Standard Webhooks signing: the message's id, the same on every attempt.
   * Default: derived from the body's SHA-256, which is stable across attempts too.
   */
  readonly id?: string;
  /** Positions in `webhooks` not to send to in this attempt (URLs disabled by the forwarder). */
  readonly skip?: readonly number[];
  /** Send to every URL, whatever its `filter` says (the forwarder's test events). */
  readonly everyUrl?: boolean;
}

/** A body ready to go: its bytes and, per URL, the full header set (X-Signature included). */
interface PreparedBody {
  /** The body as text: its `context.traceparent` is read for each attempt. */
  readonly text: string;
  readonly bytes: Buffer;
  readonly headers: readonly Readonly<Record<string, string>>[];
  /** `webhook-id`, when the destination signs with Standard Webhooks. */
  readonly id: string | undefined;
  /** The message's type and track event, read from the body when a URL has a `filter` (a body without a type goes to every URL). */
  readonly call: MessageKind | undefined;
  /** What the URLs' transforms made of it, when a URL has one (transforms.ts). */
  readonly transformed?: Transformed;
}

/** One URL's part of a call in batched delivery: the URL's position and the message text it gets. */
export interface CallPart {
  readonly index: number;
  /** The message as this URL would get it alone (after its transform): JSON text. */
  readonly text: string;
}

/**
 * What a call sends in batched delivery (`WebhookDestination#parts`): its part per URL it goes to,
 * with the transforms that failed for it (final for their URLs); or, when it goes to no URL, the
 * result to record for it at once (failed: filtered or every transform failed; retry: every URL
 * that takes it is disabled).
 */
export type CallParts =
  | { readonly parts: readonly CallPart[]; readonly failed: readonly UrlOutcome[] }
  | { readonly result: AttemptResult };

interface Sleeper {
  readonly timer: TimerHandle;
  readonly wake: (woken: boolean) => void;
}

/**
 * The webhook destination (spec 2.1, 4.1, 5, 7, 8): sends each message to every configured
 * URL at once, signed when a shared secret is set. A 2xx from any URL delivers it; otherwise
 * every other answer (5xx, 4xx, 3xx), timeouts and network errors are retried with jittered
 * exponential backoff for up to `retryWindow` after the first attempt. `410 Gone` alone is final
 * for its URL (the forwarder disables that URL); a refused certificate or network policy is too.
 */
export class WebhookDestination {
  readonly #options: ResolvedDestinationOptions;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #transport: Transport;
  /** Attempts in flight (at most `concurrency`), and those waiting for a slot, oldest first. */
  #active = 0;
  readonly #waiting: Array<() => void> = [];
  /** Resolves `close()`'s wait once no attempt is in flight. */
  #idle: (() => void) | undefined;
  /** X-Signature key (the current secret), when the destination signs that way. */
  readonly #key: KeyObject | undefined;
  /** Standard Webhooks keys, current first; empty when it does not sign that way. */
  readonly #standardKeys: readonly KeyObject[];
  /** Standard Webhooks keys of secrets replaced by a rotation, each until its grace ends. */
  readonly #previousKeys: readonly { readonly key: KeyObject; readonly until: number }[];
  readonly #sleepers = new Set<Sleeper>();
  /** Rate limits of the URLs that have one; undefined when none has. */
  readonly #gate: RateGate | undefined;
  /** True when a URL has a `filter`: each body's type (and track event) is read to apply it. */
  readonly #filtered: boolean;
  /** The URLs' transforms, compiled once; undefined when no URL has one (nothing more per call). */
  readonly #transforms: UrlTransforms | undefined;
  /** True when every URL has a transform: the message's own bytes are sent nowhere, so not signed. */
  readonly #everyUrlTransformed: boolean;
  /** See `batches`. */
  readonly #batches: readonly (BatchSettings | undefined)[] | undefined;
  #closing: Promise<void> | undefined;

  /** Throws `ConfigError` for a bad configuration (see docs/running-the-forwarder.md for the rules). */
  constructor(options: WebhookDestinationOptions, internals: DestinationInternals = {}) {
    this.#options = resolveDestinationOptions(options);
    this.#clock = internals.clock ?? systemClock;
    this.#random = internals.random ?? Math.random;
    this.#transport =
      options.transport ??
      new UndiciTransport({
        connectTimeout: this.#options.timeout,
        networkPolicy: this.#options.networkPolicy,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      });
    const { secrets, signing } = this.#options;
    this.#key = signing === 'standard-webhooks' || secrets.length === 0 ? undefined : signingKey(secrets[0]!);
    this.#standardKeys =
      signing === 'x-signature' ? [] : secrets.map((secret, i) => standardSigningKey(secret, secrets.length === 1 ? 'sharedSecret' : `sharedSecret[${i}]`));
    this.#previousKeys =
      this.#standardKeys.length === 0 ? [] : this.#options.previousSecrets.map((p, i) => ({ key: standardSigningKey(p.secret, `previousSecrets[${i}].secret`), until: p.until }));
    this.#filtered = this.#options.webhooks.some((w) => w.filter !== undefined);
    this.#transforms = this.#options.webhooks.some((w) => w.transform !== undefined) ? new UrlTransforms(this.#options.webhooks) : undefined;
    this.#everyUrlTransformed = this.#options.webhooks.every((w) => w.transform !== undefined);
    this.#batches = this.#options.webhooks.some((w) => w.batch !== undefined) ? this.#options.webhooks.map((w) => w.batch) : undefined;
    const limits = this.#options.webhooks.flatMap((w) => (w.perSecond === undefined ? [] : [{ index: w.index, url: w.url.href, perSecond: w.perSecond }]));
    if (limits.length > 0) {
      const budget = internals.rateBudget ?? new MemoryRateBudget(this.#clock);
      this.#gate = new RateGate(limits, () => budget, this.#clock, internals.rateScope ?? '', internals.onRateSlots);
    }
  }

  /**
   * Each URL's `batch` settings by position (undefined for a URL without one); undefined when no
   * URL of the destination has `batch`: then every call is attempted on its own.
   */
  get batches(): readonly (BatchSettings | undefined)[] | undefined {
    return this.#batches;
  }

  /**
   * Batched delivery, for a call: what each URL it goes to gets (its filter and transform
   * applied, the URLs in `state.skip` left out). Never rejects.
   */
  async parts(body: string, state: AttemptState): Promise<CallParts> {
    if (this.#closing !== undefined) return { result: waiting(state.attempt, this.#clock.now()) };
    try {
      const narrowed = this.#narrow(this.#filtered ? messageKind(body) : undefined, state);
      if ('status' in narrowed) return { result: narrowed };
      const sendsTo = this.#sendsTo(narrowed);
      if (sendsTo.length === 0) return { result: waiting(state.attempt, this.#clock.now()) };
      const transforms = this.#transforms;
      if (transforms === undefined) return { parts: sendsTo.map((index) => ({ index, text: body })), failed: [] };
      const done = await transforms.grouped(body, sendsTo);
      const failed = done.failed.map((f) => this.#transformOutcome(f.index, f.reason, f.durationMs));
      const out = new Set([...done.dropped, ...done.failed.map((f) => f.index)]);
      const parts = sendsTo.filter((index) => !out.has(index)).map((index) => ({ index, text: done.bodies[index]?.toString('utf8') ?? body }));
      return parts.length > 0 ? { parts, failed } : { result: noUrlLeft(state.attempt, failed) };
    } catch (error) {
      return { result: { status: 'failed', attempt: state.attempt, reason: `Internal error during the attempt: ${(error as Error).message}`, outcomes: [] } };
    }
  }

  /**
   * ONE attempt of a stored batch: `body` (exactly these bytes, signed over the whole of them)
   * to the URL at `index` alone, under its rate limit; `state.id` is the batch's `webhook-id`.
   * A URL in `state.skip` (disabled) gets nothing: `retry` in 5 s, not an attempt. Never rejects.
   */
  async attemptBatch(index: number, body: string, state: AttemptState): Promise<AttemptResult> {
    if (this.#closing !== undefined) return waiting(state.attempt, this.#clock.now());
    // Its URL is disabled: looked at again in a while, as a call whose every URL is disabled.
    if (state.skip?.includes(index) === true) return waiting(state.attempt, this.#clock.now() + FILTERED_WAIT);
    const webhooks = this.#options.webhooks;
    if (webhooks[index] === undefined) {
      return { status: 'failed', attempt: state.attempt, reason: `The webhook URL this batch was made for (position ${index + 1}) is no longer set`, outcomes: [] };
    }
    try {
      const bytes = Buffer.from(body, 'utf8');
      const length = String(bytes.length);
      const signature = this.#key === undefined ? undefined : signBody(bytes, this.#key);
      const webhookId = this.#standardKeys.length === 0 ? undefined : state.id !== undefined && HEADER_SAFE_ID.test(state.id) ? state.id : bodyId(bytes);
      const headers = webhooks.map((webhook) => {
        if (webhook.index !== index) return webhook.headers;
        const set: Record<string, string> = {};
        for (const name in webhook.headers) set[name] = webhook.headers[name] as string;
        set['Content-Length'] = length;
        if (signature !== undefined) set['X-Signature'] = signature;
        return set;
      });
      // A batch carries no one trace context: its request's span (when the operator traces) has no parent from a body.
      const prepared: PreparedBody = { text: '', bytes, headers, id: webhookId, call: undefined };
      const others = webhooks.filter((w) => w.index !== index).map((w) => w.index);
      return await this.#attemptInTurn(prepared, { ...state, skip: others });
    } catch (error) {
      return { status: 'failed', attempt: state.attempt, reason: `Internal error during the attempt: ${(error as Error).message}`, outcomes: [] };
    }
  }

  /** Serializes a message once; the same string is signed and sent on every URL and attempt. Same as `serializeWebhookMessage`. */
  static serialize(message: WebhookMessage): string {
    return serializeWebhookMessage(message);
  }

  /**
   * ONE attempt to every URL at once; no timers, never rejects. For a durable queue that keeps
   * `nextAttemptAt` itself. After `close()` nothing is sent and the answer is `retry`, due now,
   * so a queue that persists messages keeps this one.
   */
  async attempt(body: string, state: AttemptState): Promise<AttemptResult> {
    if (this.#closing !== undefined) {
      return { status: 'retry', attempt: state.attempt, nextAttemptAt: this.#clock.now(), outcomes: [] };
    }
    if (typeof body !== 'string') {
      return { status: 'failed', attempt: state.attempt, reason: `Expected the body to be a JSON string, got ${describeType(body)}`, outcomes: [] };
    }
    try {
      const prepared = this.#prepare(body, state.id);
      const narrowed = this.#narrow(prepared.call, state);
      if ('status' in narrowed) return narrowed;
      if (this.#transforms === undefined) return await this.#attemptInTurn(prepared, narrowed);
      return await this.#transformed(prepared, narrowed, this.#transforms, true);
    } catch (error) {
      // Not expected (each URL's failure is caught where it happens); keep the promise of never rejecting.
      return { status: 'failed', attempt: state.attempt, reason: `Internal error during the attempt: ${(error as Error).message}`, outcomes: [] };
    }
  }

  /**
   * Library use: attempts and in-memory retries (clock timers) until delivered or final.
   * Never rejects; after `close()`, a pending delivery resolves as failed. While the promise is
   * pending it holds the process open (retry timers alone are unref'd), so a script that awaits
   * it sees the result. The `webhook-id` is the message's `messageId` (for a string, its
   * `messageId` field), else derived from the body.
   */
  deliver(message: WebhookMessage | string): Promise<DeliveryResult> {
    if (this.#closing !== undefined) return Promise.resolve(closedResult(0, []));
    const hold = this.#clock.setTimeout(() => {}, MAX_TIMER, true);
    return this.#deliver(message).finally(() => this.#clock.clearTimeout(hold));
  }

  async #deliver(message: WebhookMessage | string): Promise<DeliveryResult> {
    let prepared: PreparedBody;
    try {
      const body = typeof message === 'string' ? message : WebhookDestination.serialize(message);
      prepared = this.#prepare(body, this.#standardKeys.length === 0 ? undefined : messageIdOf(message));
    } catch (error) {
      return { status: 'failed', attempt: 0, reason: (error as Error).message, outcomes: [] };
    }
    // The retry window counts from the first request sent, not from a wait for the rate limit.
    let firstAttemptAt: number | undefined;
    for (let attempt = 1; ;) {
      let result: AttemptResult;
      try {
        const narrowed = this.#narrow(prepared.call, { attempt, firstAttemptAt: firstAttemptAt ?? this.#clock.now() });
        if ('status' in narrowed) result = narrowed;
        else if (this.#transforms === undefined) result = await this.#attemptInTurn(prepared, narrowed);
        else {
          // Transformed once for the whole delivery: a retry sends the same bytes to the URLs left.
          if (prepared.transformed === undefined) {
            prepared = { ...prepared, transformed: await this.#transforms.grouped(prepared.text, this.#sendsTo(narrowed)) };
          }
          result = await this.#transformed(prepared, narrowed, this.#transforms, attempt === 1);
        }
      } catch (error) {
        return { status: 'failed', attempt, reason: `Internal error during the attempt: ${(error as Error).message}`, outcomes: [] };
      }
      if (result.status !== 'retry') return result;
      const sent = result.outcomes.length > 0;
      if (sent) firstAttemptAt ??= this.#clock.now();
      if (!(await this.#sleepUntil(result.nextAttemptAt))) return closedResult(sent ? attempt : attempt - 1, result.outcomes);
      if (sent) attempt++;
    }
  }

  /**
   * For a durable queue's scheduler: how many attempts may start now under the URLs' rate limits
   * (`wanted` when none applies), and, when none may, when to look again.
   */
  room(now: number, wanted: number, skip?: readonly number[]): Room {
    return this.#gate?.room(now, wanted, skip) ?? { count: wanted };
  }

  /**
   * The state of an attempt with the URLs whose `filter` does not take the message added to its
   * `skip`. A message no URL takes is `failed` at once, with nothing sent: the filters changed
   * after the forwarder routed it (which routes a message only when some URL takes it). When the
   * URLs that take it are all disabled, nothing is sent and it is due again in FILTERED_WAIT.
   */
  #narrow(call: MessageKind | undefined, state: AttemptState): AttemptState | AttemptResult {
    if (call === undefined || state.everyUrl === true) return state;
    const webhooks = this.#options.webhooks;
    const excluded: number[] = [];
    for (const w of webhooks) if (w.filter !== undefined && !w.filter.matches(call.type, call.event)) excluded.push(w.index);
    if (excluded.length === 0) return state;
    if (excluded.length === webhooks.length) {
      const what = call.type === 'track' && call.event !== undefined ? `track message ${JSON.stringify(call.event.slice(0, 60))}` : `${call.type} message`;
      return { status: 'failed', attempt: state.attempt, reason: `Filtered: no webhook URL's filter takes this ${what} (the filters changed after it was accepted); nothing was sent`, outcomes: [] };
    }
    const skip = state.skip === undefined || state.skip.length === 0 ? excluded : [...new Set([...state.skip, ...excluded])];
    if (skip.length >= webhooks.length) return waiting(state.attempt, this.#clock.now() + FILTERED_WAIT);
    return { ...state, skip };
  }

  /** The URLs an attempt in `state` goes to: those not in its `skip`. */
  #webhooksFor(state: AttemptState): readonly ResolvedWebhook[] {
    const skip = state.skip;
    return skip === undefined || skip.length === 0 ? this.#options.webhooks : this.#options.webhooks.filter((w) => !skip.includes(w.index));
  }

  /** The positions of the URLs an attempt in `state` goes to. */
  #sendsTo(state: AttemptState): number[] {
    return this.#webhooksFor(state).map((w) => w.index);
  }

  /**
   * An attempt when URLs have transforms: each URL it goes to gets what its transform made, with
   * its own length and signature; a URL whose transform skipped the call is left out, one whose
   * transform failed is a final outcome of this attempt (`failures`: reported with it). When
   * no URL is left, nothing is sent: `failed` with the transforms' reasons, or a `Filtered:` one.
   */
  async #transformed(prepared: PreparedBody, state: AttemptState, transforms: UrlTransforms, failures: boolean): Promise<AttemptResult> {
    const sendsTo = prepared.transformed === undefined ? this.#sendsTo(state) : [];
    const done = prepared.transformed ?? (await transforms.grouped(prepared.text, sendsTo));
    const ready = this.#withBodies(prepared, done);
    const failed = failures ? done.failed.map((f) => this.#transformOutcome(f.index, f.reason, f.durationMs)) : [];
    if (done.dropped.length === 0 && done.failed.length === 0) return this.#attemptInTurn(ready, state);
    const skip = [...new Set([...(state.skip ?? []), ...done.dropped, ...done.failed.map((f) => f.index)])];
    if (skip.length < this.#options.webhooks.length) return this.#attemptInTurn(ready, { ...state, skip }, failed);
    return noUrlLeft(state.attempt, failed);
  }

  /** The prepared body with each transformed URL's header set: its own Content-Length and X-Signature. */
  #withBodies(prepared: PreparedBody, done: Transformed): PreparedBody {
    if (prepared.transformed === done) return prepared;
    const headers = prepared.headers.map((set, i) => {
      const bytes = done.bodies[i];
      if (bytes === undefined) return set;
      const own: Record<string, string> = {};
      for (const name in set) own[name] = set[name] as string;
      own['Content-Length'] = String(bytes.length);
      if (this.#key !== undefined) own['X-Signature'] = signBody(bytes, this.#key);
      return own;
    });
    return { ...prepared, headers, transformed: done };
  }

  #transformOutcome(index: number, reason: string, durationMs: number): UrlOutcome {
    const webhook = this.#options.webhooks[index]!;
    return { url: webhook.display, index, error: new TransformFailedError(`${reason} (${webhook.display})`), retryable: false, durationMs };
  }

  /**
   * One attempt once every rate-limited URL has a send slot for it. Waiting for a slot is not an
   * attempt: when the budget has none soon, or the destination closes meanwhile, nothing is sent
   * and the answer is `retry` without outcomes, due when slots may be had.
   */
  #attemptInTurn(prepared: PreparedBody, state: AttemptState, extra?: readonly UrlOutcome[]): Promise<AttemptResult> {
    const gate = this.#gate;
    return gate === undefined ? this.#attempt(prepared, state, Infinity, extra) : this.#attemptWithSlot(prepared, state, gate, extra);
  }

  async #attemptWithSlot(prepared: PreparedBody, state: AttemptState, gate: RateGate, extra: readonly UrlOutcome[] | undefined): Promise<AttemptResult> {
    const slot = gate.tryTake(this.#clock.now(), state.skip) ?? (await gate.take(state.skip));
    if ('blockedUntil' in slot) return waiting(state.attempt, slot.blockedUntil);
    if (slot.at > this.#clock.now() && !(await this.#sleepUntil(slot.at))) return waiting(state.attempt, this.#clock.now());
    return this.#attempt(prepared, state, slot.deadline, extra);
  }

  /**
   * Stops retry timers (pending `deliver()` calls resolve as failed), waits for the attempts in
   * flight and queued, then releases sockets. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    for (const sleeper of this.#sleepers) {
      this.#clock.clearTimeout(sleeper.timer);
      sleeper.wake(false);
    }
    this.#sleepers.clear();
    if (this.#active > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
    await this.#transforms?.dispose();
    this.#transport.close?.();
    log('closed');
  }

  /** Bytes once, X-Signature once, header set per URL once: reused on every attempt. */
  #prepare(body: string, id: string | undefined): PreparedBody {
    const bytes = Buffer.from(body, 'utf8');
    const length = String(bytes.length);
    const signature = this.#key === undefined || this.#everyUrlTransformed ? undefined : signBody(bytes, this.#key);
    const webhookId = this.#standardKeys.length === 0 ? undefined : id !== undefined && HEADER_SAFE_ID.test(id) ? id : bodyId(bytes);
    const headers = this.#options.webhooks.map((webhook) => {
      // A copy by loop: an object spread of a record costs more, once per message and URL.
      const set: Record<string, string> = {};
      for (const name in webhook.headers) set[name] = webhook.headers[name] as string;
      set['Content-Length'] = length;
      if (signature !== undefined) set['X-Signature'] = signature;
      return set;
    });
    return { text: body, bytes, headers, id: webhookId, call: this.#filtered ? messageKind(body) : undefined };
  }

  /**
   * The header sets of one attempt: with Standard Webhooks, the id, this attempt's timestamp and
   * its signature added (the body bytes stay the same); else the prepared sets as they are.
   */
  #attemptHeaders(prepared: PreparedBody): readonly Readonly<Record<string, string>>[] {
    if (prepared.id === undefined) return prepared.headers;
    const now = this.#clock.now();
    const timestamp = Math.floor(now / 1000);
    // Secrets in their grace sign too (after the current ones), until it ends.
    const keys =
      this.#previousKeys.length === 0 ? this.#standardKeys : [...this.#standardKeys, ...this.#previousKeys.filter((p) => p.until > now).map((p) => p.key)];
    const bodies = prepared.transformed?.bodies;
    // Each URL's own bytes are signed: the message's once, a transformed body once per URL.
    let signature: string | undefined;
    const stamp = String(timestamp);
    return prepared.headers.map((headers, i) => {
      const set: Record<string, string> = {};
      for (const name in headers) set[name] = headers[name] as string;
      set['webhook-id'] = prepared.id!;
      set['webhook-timestamp'] = stamp;
      const own = bodies?.[i];
      set['webhook-signature'] = own === undefined ? (signature ??= signStandard(prepared.bytes, prepared.id!, timestamp, keys)) : signStandard(own, prepared.id!, timestamp, keys);
      return set;
    });
  }

  /** Sends to every URL not in `state.skip`; `deadline`: the latest start the rate limits allow. */
  #attempt(prepared: PreparedBody, state: AttemptState, deadline = Infinity, extra?: readonly UrlOutcome[]): Promise<AttemptResult> {
    const webhooks = this.#webhooksFor(state);
    // A free slot is taken at once; otherwise the attempt waits its turn (first come, first served).
    if (this.#active < this.#options.concurrency) {
      this.#active++;
      return this.#run(prepared, state, webhooks, deadline, extra);
    }
    return new Promise<void>((resolve) => this.#waiting.push(resolve)).then(() => this.#run(prepared, state, webhooks, deadline, extra));
  }

  /** One attempt in a slot taken for it; gives the slot to the next waiting attempt, or frees it, when done. */
  async #run(
    prepared: PreparedBody,
    state: AttemptState,
    webhooks: readonly ResolvedWebhook[],
    deadline: number,
    extra?: readonly UrlOutcome[],
  ): Promise<AttemptResult> {
    try {
      // Every URL skipped, or the slots went stale while queued: nothing sent, due again now.
      if (webhooks.length === 0 || this.#clock.now() > deadline) return waiting(state.attempt, this.#clock.now());
      // Signed when the attempt starts (not when queued), so the timestamp is the send time.
      const headers = this.#attemptHeaders(prepared);
      // The message's trace context and, when the operator traces, a span per request (tracing.ts).
      const trace = attemptTracing(prepared.text);
      const bodies = prepared.transformed?.bodies;
      const outcomes =
        webhooks.length === 1
          ? [await this.#send(webhooks[0]!, bodies?.[webhooks[0]!.index] ?? prepared.bytes, headers, state.attempt, trace)]
          : await Promise.all(webhooks.map((webhook) => this.#send(webhook, bodies?.[webhook.index] ?? prepared.bytes, headers, state.attempt, trace)));
      if (extra !== undefined && extra.length > 0) outcomes.push(...extra);
      const result = this.#decide(outcomes, state);
      if (log.enabled) logResult(result);
      return result;
    } finally {
      const next = this.#waiting.shift();
      if (next !== undefined) {
        next();
      } else if (--this.#active === 0) {
        this.#idle?.();
      }
    }
  }

  async #send(
    webhook: ResolvedWebhook,
    bytes: Buffer,
    headers: readonly Readonly<Record<string, string>>[],
    attempt: number,
    trace: AttemptTracing | undefined,
  ): Promise<UrlOutcome> {
    const traced = trace === undefined ? undefined : startAttempt(trace, webhook.url, attempt);
    const set = headers[webhook.index] ?? webhook.headers;
    const request: WebhookRequest = {
      url: webhook.url,
      headers: traced?.headers === undefined ? set : withTraceHeaders(set, traced.headers),
      body: bytes,
      timeout: this.#options.timeout,
      // The answer's first bytes, for the delivery log and the operator's log (see UrlOutcome.response).
      keepBytes: RESPONSE_BYTES,
      keepOnSuccess: this.#options.keepSuccessAnswers,
    };
    const started = performance.now();
    let outcome: UrlOutcome;
    try {
      const response: WebhookResponse = await this.#transport.send(request);
      const durationMs = Math.round(performance.now() - started);
      const { status, head } = response;
      if (status >= 200 && status < 300) {
        outcome =
          head === undefined
            ? { url: webhook.display, index: webhook.index, status, retryable: false, durationMs }
            : { url: webhook.display, index: webhook.index, status, retryable: false, durationMs, response: head };
      } else {
        // Every answer but a 2xx may come right later (a 401 while a receiver's secret is being
        // set, a 404 while it deploys); 410 Gone alone says the URL will never take one.
        const retryable = status !== GONE;
        const retryAfter = retryable ? parseRetryAfter(response.retryAfter, this.#clock.now()) : undefined;
        outcome = {
          url: webhook.display,
          index: webhook.index,
          status,
          error: new HttpError(`${webhook.display} answered HTTP ${status}${statusNote(status)}`, status, retryable, retryAfter),
          retryable,
          durationMs,
          ...(head === undefined ? {} : { response: head }),
        };
      }
    } catch (caught) {
      // A transport may throw anything; what is not ours already becomes a NetworkError.
      const error = toNetworkError(caught, webhook.display);
      const retryable = (error as { retryable?: unknown }).retryable !== false;
      outcome = { url: webhook.display, index: webhook.index, error, retryable, durationMs: Math.round(performance.now() - started) };
    }
    traced?.end(outcome.status, outcome.error?.code);
    if (log.enabled) {
      log('attempt %d %s -> %s in %d ms', attempt, webhook.display, outcome.status ?? outcome.error?.code, outcome.durationMs);
    }
    return outcome;
  }

  #decide(outcomes: UrlOutcome[], state: AttemptState): AttemptResult {
    const { attempt } = state;
    for (const outcome of outcomes) {
      if (outcome.error === undefined) return { status: 'delivered', url: outcome.url, attempt, outcomes };
    }

    const retryable = outcomes.filter((outcome) => outcome.retryable);
    if (retryable.length === 0) {
      return { status: 'failed', attempt, reason: `No webhook accepted the message and none may be retried: ${summary(outcomes)}`, outcomes };
    }
    const retryAfter = Math.max(...retryable.map((outcome) => (outcome.error as HttpError | undefined)?.retryAfter ?? 0));
    const next = nextAttemptAt({
      attempt,
      firstAttemptAt: state.firstAttemptAt,
      now: this.#clock.now(),
      retryWindow: this.#options.retryWindow,
      minDelay: this.#options.minRetryDelay,
      maxDelay: this.#options.maxRetryDelay,
      random: this.#random,
      ...(retryAfter > 0 ? { retryAfter } : {}),
    });
    if (next === undefined) {
      return {
        status: 'failed',
        attempt,
        reason: `Gave up after ${attempt} attempt${attempt === 1 ? '' : 's'}: the retry window of ${formatDuration(this.#options.retryWindow)} from the first attempt has ended. Last errors: ${summary(outcomes)}`,
        outcomes,
      };
    }
    return { status: 'retry', attempt, nextAttemptAt: next, outcomes };
  }

  /** Resolves true at `at` on the clock, or false if `close()` came first. */
  #sleepUntil(at: number): Promise<boolean> {
    if (this.#closing !== undefined) return Promise.resolve(false);
    return new Promise((resolve) => {
      const sleeper: Sleeper = {
        timer: this.#clock.setTimeout(() => {
          this.#sleepers.delete(sleeper);
          resolve(true);
        }, Math.max(0, at - this.#clock.now())),
        wake: resolve,
      };
      this.#sleepers.add(sleeper);
    });
  }
}

/** How long a message waits when every URL whose filter takes it is disabled, in ms (not an attempt). */
const FILTERED_WAIT = 5000;

/** Largest delay Node timers accept: the hold timer never fires, it is cleared when deliver() settles. */
const MAX_TIMER = 2 ** 31 - 1;

/** An id that goes in a header as is and survives whitespace trimming: 1 to 256 visible ASCII characters. Others get the body's id. */
const HEADER_SAFE_ID = /^[\x21-\x7e]{1,256}$/;

/** The message's own id for `webhook-id`, when it has one. */
function messageIdOf(message: WebhookMessage | string): string | undefined {
  let value: unknown = message;
  if (typeof message === 'string') {
    try {
      value = JSON.parse(message);
    } catch {
      return undefined; // sent as is; the id then comes from the body
    }
  }
  const id = typeof value === 'object' && value !== null ? (value as { messageId?: unknown }).messageId : undefined;
  return typeof id === 'string' ? id : undefined;
}

/** A URL's header set with the request's `traceparent` (and `tracestate`). */
function withTraceHeaders(headers: Readonly<Record<string, string>>, trace: TraceFields): Record<string, string> {
  const set: Record<string, string> = {};
  for (const name in headers) set[name] = headers[name] as string;
  set.traceparent = trace.traceparent;
  if (trace.tracestate !== undefined) set.tracestate = trace.tracestate;
  return set;
}

/** A call its transforms left no URL to go to: failed with the transforms' reasons, or filtered when every one returned null. */
function noUrlLeft(attempt: number, failed: readonly UrlOutcome[]): AttemptResult {
  if (failed.length > 0) return { status: 'failed', attempt, reason: `No webhook accepted the message and none may be retried: ${summary(failed)}`, outcomes: failed };
  return { status: 'failed', attempt, reason: 'Filtered: the transform of every URL it would go to returned null for this call; nothing was sent', outcomes: [] };
}

/** Nothing was sent: not an attempt; due again at `at` (whole ms: slot times may have fractions). */
function waiting(attempt: number, at: number): AttemptResult {
  return { status: 'retry', attempt, nextAttemptAt: Math.ceil(at), outcomes: [] };
}

function closedResult(attempt: number, outcomes: readonly UrlOutcome[]): DeliveryResult {
  return { status: 'failed', attempt, reason: 'closed: the destination was closed before the message was delivered', outcomes };
}

/** The one status that is final for its URL (Standard Webhooks: the endpoint is gone; disable it). */
export const GONE = 410;

function statusNote(status: number): string {
  if (status === GONE) return ' (Gone: final for this URL, not retried)';
  if (status >= 300 && status < 400) return ' (redirects are not followed: configure the final URL)';
  return '';
}

function summary(outcomes: readonly UrlOutcome[]): string {
  return outcomes.map((outcome) => outcome.error?.message ?? `${outcome.url}: unknown failure`).join('; ');
}

function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

function logResult(result: AttemptResult): void {
  if (result.status === 'delivered') log('attempt %d delivered via %s', result.attempt, result.url);
  else if (result.status === 'retry') log('attempt %d failed; next attempt at %s', result.attempt, new Date(result.nextAttemptAt).toISOString());
  else log('attempt %d failed for good: %s', result.attempt, result.reason);
}
