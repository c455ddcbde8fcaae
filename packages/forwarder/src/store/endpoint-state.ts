import type { DisableRule, EndpointReport, EndpointReportResult, EndpointState, EndpointStore } from './contract';
/**
 * Automatic disable of a webhook URL that only fails: the state kept per source and URL, the rule
 * (`delivery.disableAfter`: every attempt failed for that long, with at least `MIN_FAILED_ATTEMPTS`
 * of them), and the store contract the memory, SQLite and PostgreSQL stores implement. The logic is
 * here, pure, once: each store only reads and writes rows in a transaction.
 */

/** Failed attempts a URL needs, besides the time, before it is disabled. */
export const MIN_FAILED_ATTEMPTS = 10;

/** Default of `delivery.disableAfter`: 24 h in ms. */
export const DEFAULT_DISABLE_AFTER = 24 * 3_600_000;

function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}

/** A new URL's state: no failure yet, enabled. */
export function freshState(report: Pick<EndpointReport, 'source' | 'key' | 'url'>): EndpointState {
  return {
    source: report.source,
    key: report.key,
    url: report.url,
    failures: 0,
    failingSince: undefined,
    lastFailureAt: undefined,
    lastError: undefined,
    disabledAt: undefined,
    disabledReason: undefined,
  };
}

/**
 * The state after a report, and whether the report disabled it. A URL is disabled once its run of
 * failures lasts `rule.after` ms (from its first failure to its latest) with at least
 * `rule.minAttempts` failed attempts (never with `rule.after` 0), or at once when it answered
 * 410 Gone (Standard Webhooks' rule: the receiver says the endpoint is gone for good).
 */
export function applyReport(before: EndpointState | undefined, report: EndpointReport, rule: DisableRule): { state: EndpointState; disabled: boolean } {
  const base = before ?? freshState(report);
  const restart = report.reset || base.failingSince === undefined;
  const failures = (report.reset ? 0 : base.failures) + report.failures;
  const failingSince = report.failures === 0 ? (report.reset ? undefined : base.failingSince) : restart ? report.firstFailureAt : base.failingSince;
  const state: EndpointState = {
    ...base,
    url: report.url,
    failures,
    failingSince,
    lastFailureAt: report.lastFailureAt ?? base.lastFailureAt,
    lastError: report.lastError ?? base.lastError,
  };
  const last = state.lastFailureAt;
  if (report.gone === true && state.disabledAt === undefined) {
    const at = last ?? report.lastFailureAt ?? 0;
    const reason = `The receiver answered 410 Gone at ${new Date(at).toISOString()}: it takes no more deliveries at this URL; last error: ${state.lastError ?? 'unknown'}`;
    return { state: { ...state, disabledAt: at, disabledReason: reason }, disabled: true };
  }
  const meets =
    rule.after > 0 &&
    state.disabledAt === undefined &&
    failingSince !== undefined &&
    last !== undefined &&
    failures >= rule.minAttempts &&
    last - failingSince >= rule.after;
  if (!meets) return { state, disabled: false };
  const reason = `Every attempt failed for ${duration(last - failingSince)} (${failures} attempts since ${new Date(failingSince).toISOString()}); last error: ${state.lastError ?? 'unknown'}`;
  return { state: { ...state, disabledAt: last, disabledReason: reason }, disabled: true };
}

/** A disabled state enabled again: no run of failures, the last error kept for reference. */
export function enabledState(state: EndpointState): EndpointState {
  return { ...state, failures: 0, failingSince: undefined, disabledAt: undefined, disabledReason: undefined };
}

/** The states in process memory: for the memory store and stores that keep none. */
export class MemoryEndpointStore implements EndpointStore {
  private readonly states = new Map<string, EndpointState>();

  async list(): Promise<EndpointState[]> {
    return [...this.states.values()];
  }

  async report(reports: readonly EndpointReport[], rule: DisableRule): Promise<EndpointReportResult> {
    const states: EndpointState[] = [];
    const disabled: EndpointState[] = [];
    for (const report of reports) {
      const id = `${report.source}\n${report.key}`;
      const next = applyReport(this.states.get(id), report, rule);
      this.states.set(id, next.state);
      states.push(next.state);
      if (next.disabled) disabled.push(next.state);
    }
    return { states, disabled };
  }

  async enable(source: string, key: string): Promise<EndpointState | undefined> {
    const id = `${source}\n${key}`;
    const state = this.states.get(id);
    if (state?.disabledAt === undefined) return undefined;
    this.states.set(id, enabledState(state));
    return state;
  }
}
