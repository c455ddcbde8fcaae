import { compileCheck } from '../../validation/check';
import type { Check } from '../../validation/check';
import type { RouteSpec } from './define';

export type { Check, Problem } from '../../validation/check';

/** The checks of a route, compiled once. */
export interface RouteChecks {
  /** The path's parameters, run on them once percent-decoded. */
  readonly params?: Check;
  readonly query?: Check;
  readonly body?: Check;
}

/** Compiles the checks of every route (at start-up: a schema Ajv refuses fails then, not at the first request). */
export function compileChecks(routes: readonly RouteSpec[]): Map<RouteSpec, RouteChecks> {
  const checks = new Map<RouteSpec, RouteChecks>();
  for (const r of routes) {
    checks.set(r, {
      ...(r.params === undefined ? {} : { params: compileCheck(r.params, { noun: 'parameter', fromStrings: true }) }),
      ...(r.query === undefined || r.queryCheckedBy === 'handler' ? {} : { query: compileCheck(r.query, { noun: 'parameter', fromStrings: true }) }),
      ...(r.body === undefined || r.body.checkedBy === 'handler' ? {} : { body: compileCheck(r.body.schema) }),
    });
  }
  return checks;
}

/** The query as an object: each parameter's last value; an empty one is absent, as if not sent. */
export function queryObject(params: URLSearchParams): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [key, value] of params) {
    if (value === '') delete query[key];
    else query[key] = value;
  }
  return query;
}
