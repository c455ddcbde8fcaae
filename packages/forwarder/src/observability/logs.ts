import type { Notice } from '../delivery/notify';
import type { AttemptReport } from '../scheduling/scheduler';

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
  private readonly windows = new Map<string, { suppressed: number; fields: object; msg: string; level: 'warn' | 'error'; timer: NodeJS.Timeout }>();

  constructor(private readonly logger: OperatorLogger) {}

  write(key: string, level: 'warn' | 'error', fields: object, msg: string): void {
    const open = this.windows.get(key);
    if (open !== undefined) {
      open.suppressed++;
      open.fields = fields;
      open.msg = msg;
      return;
    }
    this.logger[level](fields, msg);
    const timer = setTimeout(() => this.close(key), LOG_WINDOW_MS);
    timer.unref();
    this.windows.set(key, { suppressed: 0, fields, msg, level, timer });
  }

  private close(key: string): void {
    const open = this.windows.get(key);
    if (open === undefined) return;
    this.windows.delete(key);
    if (open.suppressed > 0) this.logger[open.level]({ ...open.fields, repeated: open.suppressed, windowSeconds: LOG_WINDOW_MS / 1000 }, `${open.msg} (and ${open.suppressed} more like it in the last ${LOG_WINDOW_MS / 1000} s)`);
  }

  /** Writes what each open window counted. */
  flush(): void {
    for (const [key, open] of [...this.windows]) {
      clearTimeout(open.timer);
      this.close(key);
    }
  }
}

/**
 * The forwarder's operator log: refused ingestion, deliveries failed for good, endpoints
 * disabled and enabled, faults of the store and the delivery loop. Fed by the HTTP layer and the
 * delivery side; writes nothing without a logger (the library's default).
 */
export class OperatorLog {
  private readonly throttle: Throttle | undefined;

  constructor(private readonly logger: OperatorLogger | undefined) {
    this.throttle = logger === undefined ? undefined : new Throttle(logger);
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

  /** One attempt's report: a delivery failed for good is written (never a body or a query). */
  attempt(report: AttemptReport): void {
    if (this.throttle === undefined || report.result.status !== 'failed' || report.stale === true) return;
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
