import { checkout, numberArray, pgText, textArray } from './pg-driver';
import type { Pool } from 'pg';
import { applyReport } from '../endpoint-state';
import { toEndpointState } from '../endpoint-rows';
import type { EndpointRow } from '../endpoint-rows';
import type { DisableRule, EndpointReport, EndpointReportResult, EndpointState, EndpointStore } from '../contract';
import { ENDPOINTS } from './sql';

/**
 * The endpoint states in PostgreSQL (`endpoint_states`), shared by every instance. A report locks
 * its rows (in one order, so that two instances never deadlock), folds the outcomes in with the
 * same code as the other stores, and writes them back in one transaction: a URL is disabled by
 * exactly one report, on one instance.
 */
export class PostgresEndpointStore implements EndpointStore {
  constructor(private readonly pool: Pool) {}

  async list(): Promise<EndpointState[]> {
    const { rows } = await this.pool.query<EndpointRow>({ name: 'eventrelay-endpoints-list', text: ENDPOINTS.list });
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
        ENDPOINTS.insertNew,
        [sources, keys, textArray(sorted.map((r) => pgText(r.url)))],
      );
      const { rows } = await client.query<EndpointRow>(
        ENDPOINTS.lockStates,
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
        ENDPOINTS.update,
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
      ENDPOINTS.enable,
      [source, key],
    );
    return rows[0] === undefined ? undefined : toEndpointState(rows[0]);
  }
}
