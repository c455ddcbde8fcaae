import type BetterSqlite3 from 'better-sqlite3';
import { applyReport, enabledState } from '../endpoint-state';
import { toEndpointState } from '../endpoint-rows';
import type { EndpointRow } from '../endpoint-rows';
import { ENDPOINTS } from './sql';
import type { DisableRule, EndpointReport, EndpointReportResult, EndpointState, EndpointStore } from '../contract';

/** The endpoint states in the SQLite database (`endpoint_states`): one transaction per report. */
export class SqliteEndpointStore implements EndpointStore {
  private readonly statements;
  private readonly reportTx: (reports: readonly EndpointReport[], rule: DisableRule) => EndpointReportResult;
  private readonly enableTx: (source: string, key: string) => EndpointState | undefined;

  constructor(db: BetterSqlite3.Database) {
    this.statements = {
      list: db.prepare(ENDPOINTS.list),
      get: db.prepare(ENDPOINTS.get),
      put: db.prepare(ENDPOINTS.put),
    };
    const s = this.statements;
    const put = (x: EndpointState) =>
      s.put.run(x.source, x.key, x.url, x.failures, x.failingSince ?? null, x.lastFailureAt ?? null, x.lastError ?? null,
        x.disabledAt ?? null, x.disabledReason ?? null);
    this.reportTx = db.transaction((reports: readonly EndpointReport[], rule: DisableRule) => {
      const states: EndpointState[] = [];
      const disabled: EndpointState[] = [];
      for (const report of reports) {
        const row = s.get.get(report.source, report.key) as EndpointRow | undefined;
        const next = applyReport(row === undefined ? undefined : toEndpointState(row), report, rule);
        put(next.state);
        states.push(next.state);
        if (next.disabled) disabled.push(next.state);
      }
      return { states, disabled };
    });
    this.enableTx = db.transaction((source: string, key: string) => {
      const row = s.get.get(source, key) as EndpointRow | undefined;
      if (row === undefined || row.disabled_at === null) return undefined;
      const state = toEndpointState(row);
      put(enabledState(state));
      return state;
    });
  }

  async list(): Promise<EndpointState[]> {
    return (this.statements.list.all() as EndpointRow[]).map(toEndpointState);
  }

  async report(reports: readonly EndpointReport[], rule: DisableRule): Promise<EndpointReportResult> {
    return this.reportTx(reports, rule);
  }

  async enable(source: string, key: string): Promise<EndpointState | undefined> {
    return this.enableTx(source, key);
  }
}
