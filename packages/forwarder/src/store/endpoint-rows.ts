import type { EndpointState } from './contract';

/** An `endpoint_states` row, as SQLite and PostgreSQL read it. */
export interface EndpointRow {
  source: string;
  url_key: string;
  url: string;
  failures: number;
  failing_since: number | null;
  last_failure_at: number | null;
  last_error: string | null;
  disabled_at: number | null;
  disabled_reason: string | null;
}

export function toEndpointState(row: EndpointRow): EndpointState {
  return {
    source: row.source,
    key: row.url_key,
    url: row.url,
    failures: Number(row.failures),
    failingSince: row.failing_since ?? undefined,
    lastFailureAt: row.last_failure_at ?? undefined,
    lastError: row.last_error ?? undefined,
    disabledAt: row.disabled_at ?? undefined,
    disabledReason: row.disabled_reason ?? undefined,
  };
}
