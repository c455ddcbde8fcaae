import { FORWARDER_VERSION } from '../../version';
import { RouteTable } from './define';
import type { RouteInput, RouteSpec } from './define';
import { buildDocument } from './document';
import { DELETIONS_ROUTES, DELIVERY_LOG_ROUTES } from './delivery-log';
import { ENDPOINTS_ROUTES } from './endpoints';
import { INGEST_ROUTES, SETTINGS_ROUTE } from './ingestion';
import { DEBUGGER_ROUTES, OPERATIONS_ROUTES } from './operations';
import { SCHEMA_ROUTES } from './schema';
import { SOURCES_ROUTES, TRANSFORM_ROUTES } from './sources';
import { compileChecks } from './validate';

/** The routes the operations layer answers (admin/), with their literal types: each handler's input is typed from its route. */
const OPERATIONS_LAYER_ROUTES = [
  ...OPERATIONS_ROUTES,
  ...DEBUGGER_ROUTES,
  ...DELIVERY_LOG_ROUTES,
  ...DELETIONS_ROUTES,
  ...SOURCES_ROUTES,
  ...ENDPOINTS_ROUTES,
  ...SCHEMA_ROUTES,
  ...TRANSFORM_ROUTES,
];

/** What each route's handler gets (`params`, `query`, `body`), by operationId, typed from the route's schemas (TypeBox `Static`). */
export type HandlerInputs = { [R in (typeof OPERATIONS_LAYER_ROUTES)[number] as R['operationId']]: RouteInput<R> };

/**
 * Every HTTP route of the forwarder, one entry each (method, path, auth, request and answer
 * schemas): dispatch, validation, handler types and `GET /openapi.json` come from these.
 * The admin routes' handlers are in admin/api.ts, by operationId.
 */
export const ROUTES: readonly RouteSpec[] = [...INGEST_ROUTES, SETTINGS_ROUTE, ...OPERATIONS_LAYER_ROUTES];

/** The routes by path, for dispatch. */
export const ROUTE_TABLE = new RouteTable(ROUTES);

/** Each route's checks, compiled once when the module loads. */
export const ROUTE_CHECKS = compileChecks(ROUTES);

let documentText: string | undefined;

/** The OpenAPI 3.1 document of the routes as JSON text, built and serialized once per process. */
export function apiDocumentText(): string {
  documentText ??= JSON.stringify(buildDocument(ROUTES, FORWARDER_VERSION));
  return documentText;
}

/** The OpenAPI 3.1 document of the routes (`GET /openapi.json`, `@eventrelay/forwarder/openapi.json`). */
export function apiDocument(): Record<string, unknown> {
  return JSON.parse(apiDocumentText()) as Record<string, unknown>;
}

export type { RouteSpec, RouteInput, RouteMatch, Answer, Method, Auth } from './define';
export type { Problem } from './validate';
export { queryObject } from './validate';
export { DELIVERY_ID_PATTERN } from './delivery-log';
export { RouteTable } from './define';
