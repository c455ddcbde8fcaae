import { Type } from '@sinclair/typebox';
import { route } from './define';
import { InvalidRequest, NotFound, Unavailable } from './answers';
import { Overview, Stats } from './shapes';

/** No parameters: an unknown one is a 400 that names it. */
const NO_QUERY = Type.Object({}, { additionalProperties: false });

export const OPERATIONS_ROUTES = [
  route({
    method: 'GET',
    path: '/health',
    auth: 'none',
    operationId: 'health',
    query: NO_QUERY,
    tags: ['operations'],
    summary: 'Liveness',
    description: 'No token; 503 while shutting down. Also answers HEAD. A query parameter is refused (400).',
    responses: { 200: { description: 'Up.', schema: Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false }) }, 400: InvalidRequest, 503: Unavailable },
  }),
  route({
    method: 'GET',
    path: '/stats',
    auth: 'none',
    operationId: 'stats',
    query: NO_QUERY,
    tags: ['operations'],
    summary: 'Counts of this instance',
    description: 'No token; nothing secret. Also answers HEAD.',
    responses: { 200: { description: 'The counts.', schema: Stats }, 400: InvalidRequest, 503: Unavailable },
  }),
  route({
    method: 'GET',
    path: '/openapi.json',
    auth: 'none',
    operationId: 'openapi',
    query: NO_QUERY,
    tags: ['operations'],
    summary: 'This document',
    description: "The OpenAPI 3.1 description of the ingestion and admin API, with the server's version in `info.version`. No token. Also answers HEAD.",
    responses: { 200: { description: 'This document.', schema: Type.Object({ }) }, 400: InvalidRequest, 503: Unavailable },
  }),
  route({
    method: 'GET',
    path: '/metrics',
    auth: 'none',
    operationId: 'metrics',
    tags: ['operations'],
    summary: 'Prometheus metrics',
    description: "Prometheus text format (`prom-client`), names prefixed `eventrelay_`. The path is the config's `metrics.path` (default `/metrics`); absent when metrics are off. No token. Also answers HEAD.",
    responses: { 200: { description: 'The metrics.', schema: Type.String(), contentType: 'text/plain' }, 404: NotFound, 503: Unavailable },
  }),
  route({
    method: 'GET',
    path: '/admin/overview',
    auth: 'admin',
    operationId: 'overview',
    tags: ['operations'],
    summary: 'What the debugger page draws',
    description: "Sources, instances, this instance's stats with the endpoint health of every instance, the per-minute chart of the last hour, and disabled URLs.",
    responses: { 200: { description: 'The overview.', schema: Overview }, 400: InvalidRequest },
  }),
] as const;

export const DEBUGGER_ROUTES = [
  route({
    method: 'GET',
    path: '/debugger',
    auth: 'none',
    operationId: 'debuggerPage',
    tags: ['debugger'],
    summary: 'The debugger page',
    description: 'A static file of the debugger page, shipped in the package (no CDN); off with `"debugger": false`. The page signs in with the admin token and calls the admin API. Also answers HEAD.',
    responses: { 200: { description: 'The file, with `ETag` and a strict `Content-Security-Policy`.', schema: Type.String(), contentType: 'text/html', headers: { ETag: { schema: { type: 'string' } } } }, 304: { description: 'Not modified (`If-None-Match` matched the `ETag`).' }, 404: NotFound, 503: Unavailable },
  }),
  route({
    method: 'GET',
    path: '/debugger/app.js',
    auth: 'none',
    operationId: 'debuggerScript',
    tags: ['debugger'],
    summary: "The debugger page's script",
    description: 'A static file of the debugger page, shipped in the package (no CDN); off with `"debugger": false`. The page signs in with the admin token and calls the admin API. Also answers HEAD.',
    responses: { 200: { description: 'The file, with `ETag` and a strict `Content-Security-Policy`.', schema: Type.String(), contentType: 'text/javascript', headers: { ETag: { schema: { type: 'string' } } } }, 304: { description: 'Not modified (`If-None-Match` matched the `ETag`).' }, 404: NotFound, 503: Unavailable },
  }),
  route({
    method: 'GET',
    path: '/debugger/favicon.svg',
    auth: 'none',
    operationId: 'debuggerIcon',
    tags: ['debugger'],
    summary: "The debugger page's icon",
    description: 'A static file of the debugger page, shipped in the package (no CDN); off with `"debugger": false`. The page signs in with the admin token and calls the admin API. Also answers HEAD.',
    responses: { 200: { description: 'The file, with `ETag` and a strict `Content-Security-Policy`.', schema: Type.String(), contentType: 'image/svg+xml', headers: { ETag: { schema: { type: 'string' } } } }, 304: { description: 'Not modified (`If-None-Match` matched the `ETag`).' }, 404: NotFound, 503: Unavailable },
  }),
  route({
    method: 'GET',
    path: '/debugger/app.css',
    auth: 'none',
    operationId: 'debuggerStyles',
    tags: ['debugger'],
    summary: "The debugger page's styles",
    description: 'A static file of the debugger page, shipped in the package (no CDN); off with `"debugger": false`. The page signs in with the admin token and calls the admin API. Also answers HEAD.',
    responses: { 200: { description: 'The file, with `ETag` and a strict `Content-Security-Policy`.', schema: Type.String(), contentType: 'text/css', headers: { ETag: { schema: { type: 'string' } } } }, 304: { description: 'Not modified (`If-None-Match` matched the `ETag`).' }, 404: NotFound, 503: Unavailable },
  }),
] as const;
