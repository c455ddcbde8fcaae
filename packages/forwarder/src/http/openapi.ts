import document from './openapi.json' with { type: 'json' };
import { FORWARDER_VERSION } from '../version';

/**
 * The OpenAPI 3.1 description of the ingestion and admin API (`GET /openapi.json`). One source:
 * src/http/openapi.json, bundled into the code by the build and copied beside it as
 * dist/openapi.json (the package's `@eventrelay/forwarder/openapi.json`). Tests check it with an
 * independent validator and check every route's real answers against it.
 */
export function apiDocument(): object {
  return { ...document, info: { ...document.info, version: FORWARDER_VERSION } };
}
