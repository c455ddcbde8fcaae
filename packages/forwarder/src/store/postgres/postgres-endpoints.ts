import { checkout } from './pg-checkout';
import type { Pool } from 'pg';
import { applyReport } from '../endpoint-state';
import { toEndpointState } from '../endpoint-rows';
import type { EndpointRow } from '../endpoint-rows';
import { numberArray, pgText, textArray } from './pg-values';
import type { DisableRule, EndpointReport, EndpointReportResult, EndpointState, EndpointStore } from '../contract';

const COLUMNS = 'source, url_key, url, failures, failing_since, last_failure_at, last_error, disabled_at, disabled_reason';

/**
 * The endpoint states in PostgreSQL (`endpoint_states`), shared by every instance. A report locks
 * its rows (in one order, so that two instances never deadlock), folds the outcomes in with the
 * same code as the other stores, and writes them back in one transaction: a URL is disabled by
 * exactly one report, on one instance.
 */
export class PostgresEndpointStore implements EndpointStore {
  constructor(private readonly pool: Pool) {}

  async list(): Promise<EndpointState[]> {
    const { rows } = await this.pool.query<EndpointRow>({ name: 'eventrelay-endpoints-list', text: `SELECT ${COLUMNS} FROM endpoint_states` });
    return rows.map(toEndpointState);
  }

  async report(reports: readonly EndpointReport[], rule: DisableRule): Promise<EndpointReportResult> {
    if (reports.length === 0) return { states: [], disabled: [] };
    const sorted = [...reports].sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const sources = textArray(sorted.map((r) => r.source));
    const keys = textArray(sorted.map((r) => r.key));
    const client = await checkout(this.pool);
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO endpoint_states (source, url_key, url) SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING`,
        [sources, keys, textArray(sorted.map((r) => pgText(r.url)))],
      );
      const { rows } = await client.query<EndpointRow>(
        `SELECT ${COLUMNS} FROM endpoint_states WHERE (source, url_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
         ORDER BY source, url_key FOR UPDATE`,
        [sources, keys],
      );
      const before = new Map(rows.map((row) => [`${row.source}\n${row.url_key}`, toEndpointState(row)]));
      const states: EndpointState[] = [];
      const disabled: EndpointState[] = [];
      for (const report of sorted) {
        const next = applyReport(before.get(`${report.source}\n${report.key}`), { ...report, url: pgText(report.url) }, rule);
        states.push(next.state);
        if (next.disabled) disabled.push(next.state);
      }
      await client.query(
        `UPDATE endpoint_states e SET url = x.url, failures = x.failures, failing_since = x.failing_since, last_failure_at = x.last_failure_at,
           last_error = x.last_error, disabled_at = x.disabled_at, disabled_reason = x.disabled_reason
         FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[], $6::bigint[], $7::text[], $8::bigint[], $9::text[])
           AS x(source, url_key, url, failures, failing_since, last_failure_at, last_error, disabled_at, disabled_reason)
         WHERE e.source = x.source AND e.url_key = x.url_key`,
        [
          textArray(states.map((s) => s.source)),
          textArray(states.map((s) => s.key)),
          textArray(states.map((s) => s.url)),
          numberArray(states.map((s) => s.failures)),
          numberArray(states.map((s) => s.failingSince ?? null)),
          numberArray(states.map((s) => s.lastFailureAt ?? null)),
          textArray(states.map((s) => (s.lastError === undefined ? null : pgText(s.lastError)))),
          numberArray(states.map((s) => s.disabledAt ?? null)),
          textArray(states.map((s) => (s.disabledReason === undefined ? null : pgText(s.disabledReason)))),
        ],
      );
      await client.query('COMMIT');
      return { states, disabled };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async enable(source: string, key: string): Promise<EndpointState | undefined> {
    const { rows } = await this.pool.query<EndpointRow>(
      `WITH old AS (SELECT ${COLUMNS} FROM endpoint_states WHERE source = $1 AND url_key = $2 AND disabled_at IS NOT NULL FOR UPDATE)
       UPDATE endpoint_states e SET failures = 0, failing_since = NULL, disabled_at = NULL, disabled_reason = NULL
       FROM old WHERE e.source = old.source AND e.url_key = old.url_key
       RETURNING ${COLUMNS.split(', ').map((c) => `old.${c}`).join(', ')}`,
      [source, key],
    );
    return rows[0] === undefined ? undefined : toEndpointState(rows[0]);
  }
}
