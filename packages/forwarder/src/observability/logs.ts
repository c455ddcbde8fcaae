import { systemClock } from 'eventrelay/internal';
import type { Clock, TimerHandle } from 'eventrelay/internal';
import type { Notice } from '../delivery/notify';
import type { AttemptReport } from '../scheduling/queue';
import type { UrlOutcome } from '../delivery/destination';
import { responseText } from '../store/delivery-log';

/**
 * What the forwarder writes operator log lines with: the methods of a pino logger it uses (a pino
 * instance is one; `eventrelay serve` makes one, JSON lines on stdout). Each line is an object of
 * fields and a message. Never a secret, a write key, a token or a body: fields are source names,
 * redacted URLs, counts, codes and reasons.
 */
export interface OperatorLogger {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

/** Where a refused request came from: its path and `Origin`, and whether it was a CORS preflight. */
export interface RefusedRequestAt {
  readonly path: string;
  readonly origin: string | undefined;
  readonly preflight?: boolean;
}

/** How often a kind of line that may come in floods is written, at most: once per key per window. */
export const LOG_WINDOW_MS = 10_000;

/**
 * Lines that could come by the thousand (refused requests, failed deliveries, store faults): the
 * first of each key is written at once; those that follow within `LOG_WINDOW_MS` are counted, and
 * written as one line with the count when the window ends. An operator sees every kind of failure
 * once and clearly, and a flood costs a line per 10 s.
 */
class Throttle {
  private readonly windows = new Map<string, { suppressed: number; fields: object; msg: string; level: 'warn' | 'error'; timer: TimerHandle }>();

  constructor(
    private readonly logger: OperatorLogger,
    private readonly clock: Clock,
  ) {}

  write(key: string, level: 'warn' | 'error', fields: object, msg: string): void {
    const open = this.windows.get(key);
    if (open !== undefined) {
      open.suppressed++;
      open.fields = fields;
      open.msg = msg;
      return;
    }
    this.logger[level](fields, msg);
    const timer = this.clock.setTimeout(() => this.close(key), LOG_WINDOW_MS);
    this.windows.set(key, { suppressed: 0, fields, msg, level, timer });
  }

  private close(key: string): void {
    const open = this.windows.get(key);
    if (open === undefined) return;
    this.windows.delete(key);
    if (open.suppressed > 0) this.logger[open.level]({ ...open.fields, repeated: open.suppressed, windowSeconds: LOG_WINDOW_MS / 1000 }, `${open.msg} ${repeatedNote(open.suppressed)}`);
  }

  /** Writes what each open window counted. */
  flush(): void {
    for (const [key, open] of [...this.windows]) {
      this.clock.clearTimeout(open.timer);
      this.close(key);
    }
  }
}

/** "(repeated once in the last 10 s)", "(repeated 7 times in the last 10 s)": lines written after the first of a window. */
export function repeatedNote(times: number): string {
  return `(repeated ${times === 1 ? 'once' : `${times} times`} in the last ${LOG_WINDOW_MS / 1000} s)`;
}

/** Least time between two `endpoint.failing` lines of one endpoint while it keeps failing. */
export const FAILING_LINE_MS = 60_000;

/** Most characters of an answer an `endpoint.failing` line shows. */
export const FAILING_RESPONSE_CHARS = 200;

/** Most endpoints followed at once; past it the one that failed first is forgotten (it logs `endpoint.failing` again if it keeps on). */
const FAILING_ENDPOINTS = 10_000;

/**
 * The first `FAILING_RESPONSE_CHARS` characters of an answer, its control characters (C0, DEL,
 * C1, the line and paragraph separators) escaped as `\n`, `\r`, `\t` or `\uXXXX`: the line
 * shows what the receiver said, never moves the cursor of a terminal reading it. Null without one.
 */
export function responseExcerpt(bytes: Uint8Array | undefined): string | null {
  const text = responseText(bytes);
  if (text === null) return null;
  let out = '';
  let chars = 0;
  for (const ch of text) {
    if (chars++ === FAILING_RESPONSE_CHARS) break;
    out += ESCAPES[ch] ?? (CONTROL.test(ch) ? `\\u${ch.codePointAt(0)!.toString(16).padStart(4, '0')}` : ch);
  }
  return out;
}

const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** An endpoint that is failing: since when, attempts failed in all and since its last line. */
interface Failing {
  readonly since: number;
  failed: number;
  unreported: number;
  lastLineAt: number;
}

/**
 * Which endpoints (source and redacted URL) are failing, from the attempts' answers:
 * `endpoint.failing` at the first failed attempt (first ever, or first after a success), then at
 * most one line per FAILING_LINE_MS while it keeps failing, with the count since the last;
 * `endpoint.recovered` at its first 2xx after that. Time comes from the forwarder's clock.
 */
class FailingEndpoints {
  private readonly failing = new Map<string, Failing>();

  constructor(
    private readonly logger: OperatorLogger,
    private readonly clock: Clock,
  ) {}

  outcome(source: string, o: UrlOutcome): void {
    const ok = o.error === undefined;
    // The common case, a 2xx while nothing fails: no key to build, nothing to look up.
    if (ok && this.failing.size === 0) return;
    const key = `${source}\u0000${o.url}`;
    const state = this.failing.get(key);
    if (ok) {
      if (state === undefined) return;
      this.failing.delete(key);
      const failedForMs = Math.max(0, this.clock.now() - state.since);
      this.logger.info(
        { event: 'endpoint.recovered', source, url: o.url, status: o.status ?? null, failedForMs, failedAttempts: state.failed },
        `endpoint recovered: ${o.url} after ${state.failed} failed attempt${state.failed === 1 ? '' : 's'} in ${formatMs(failedForMs)}`,
      );
      return;
    }
    const now = this.clock.now();
    if (state === undefined) {
      if (this.failing.size >= FAILING_ENDPOINTS) this.failing.delete(this.failing.keys().next().value!);
      this.failing.set(key, { since: now, failed: 1, unreported: 0, lastLineAt: now });
      this.write(source, o, { failedAttempts: 1 }, `endpoint failing: ${o.url} ${what(o)}`);
      return;
    }
    state.failed++;
    state.unreported++;
    if (now - state.lastLineAt < FAILING_LINE_MS) return;
    const count = state.unreported;
    state.unreported = 0;
    state.lastLineAt = now;
    this.write(
      source,
      o,
      { failedAttempts: state.failed, failedSinceLast: count, failingForMs: now - state.since },
      `endpoint still failing: ${o.url} ${what(o)} (${count} more failed attempt${count === 1 ? '' : 's'} since the last line)`,
    );
  }

  private write(source: string, o: UrlOutcome, counts: object, msg: string): void {
    const answer = o.status === undefined ? { error: o.error?.code ?? 'error' } : { status: o.status };
    this.logger.warn({ event: 'endpoint.failing', source, url: o.url, ...answer, response: responseExcerpt(o.response), ...counts }, msg);
  }
}

function what(o: UrlOutcome): string {
  return o.status === undefined ? `(${o.error?.code ?? 'error'})` : `(HTTP ${o.status})`;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
}

/**
 * The forwarder's operator log: refused ingestion, deliveries failed for good, endpoints
 * disabled and enabled, faults of the store and the delivery loop. Fed by the HTTP layer and the
 * delivery side; writes nothing without a logger (the library's default).
 */
export class OperatorLog {
  private readonly throttle: Throttle | undefined;
  private readonly endpoints: FailingEndpoints | undefined;

  /** `clock`: the forwarder's (the flood windows and the failing endpoints' minute). */
  constructor(
    private readonly logger: OperatorLogger | undefined,
    clock: Clock = systemClock,
  ) {
    this.throttle = logger === undefined ? undefined : new Throttle(logger, clock);
    this.endpoints = logger === undefined ? undefined : new FailingEndpoints(logger, clock);
  }

  /**
   * A request the ingestion API refused (`reason`: the answer's code), or messages of it; `at`: the
   * request's path and `Origin`. A preflight is a refused request, not a message (`messages` 0).
   */
  refused(reason: string, status: number, source: string | undefined, messages = 1, at?: RefusedRequestAt): void {
    const where = at === undefined ? {} : { path: at.path, origin: at.origin === undefined ? null : at.origin.length <= 200 ? at.origin : `(an origin of ${at.origin.length} characters)`, ...(at.preflight === true ? { preflight: true } : {}) };
    const count = at?.preflight === true ? 0 : messages;
    this.throttle?.write(`refused\u0000${reason}\u0000${source ?? ''}`, 'warn', { event: 'ingest.refused', reason, status, source: source ?? null, messages: count, ...where }, `ingestion refused: ${reason}`);
  }

  /**
   * One attempt's report: its URLs' answers (`endpoint.failing`, `endpoint.recovered`) and a
   * delivery failed for good are written (never a webhook body or a query; a receiver's answer
   * only cut and escaped, in `endpoint.failing`).
   */
  attempt(report: AttemptReport): void {
    // A call sent in a batch: its URL's answer was told once, with the batch's own report.
    if (this.endpoints !== undefined && report.batch === undefined) for (const o of report.result.outcomes) this.endpoints.outcome(report.source, o);
    // A batch that failed is told by each call in it that it failed.
    if (this.throttle === undefined || report.result.status !== 'failed' || report.stale === true || report.kind === 'batch') return;
    const { result } = report;
    this.throttle.write(
      `failed\u0000${report.source}`,
      'warn',
      { event: 'delivery.failed', source: report.source, kind: report.kind, messageId: report.messageId, attempts: result.attempt, reason: result.reason },
      `delivery failed for good: ${result.reason}`,
    );
  }

  /** A notice for the operator: an endpoint disabled or enabled, a delivery given up. */
  notice(notice: Notice): void {
    if (this.logger === undefined || notice.type === 'delivery.exhausted') return; // a failed delivery is written by `attempt`
    const fields = { event: notice.type, source: notice.source, url: notice.url, reason: notice.reason ?? null, lastError: notice.lastError };
    if (notice.type === 'endpoint.disabled') this.logger.warn(fields, `endpoint disabled: ${notice.url}${notice.reason === undefined ? '' : ` (${notice.reason})`}`);
    else this.logger.info(fields, `endpoint enabled: ${notice.url}`);
  }

  /** A failure in the background: the store, the delivery loop, a listener. */
  fault(what: string, error: Error): void {
    const code = (error as { code?: unknown }).code;
    this.throttle?.write(`fault\u0000${what}\u0000${typeof code === 'string' ? code : error.name}`, 'error', { event: 'fault', what, code: typeof code === 'string' ? code : null, error: error.message }, `${what}: ${error.message}`);
  }

  /** Writes the counts of the windows still open (at shutdown). */
  flush(): void {
    this.throttle?.flush();
  }
}
