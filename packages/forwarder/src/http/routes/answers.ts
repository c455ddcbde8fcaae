import type { Answer } from './define';
import { ErrorShape } from './shapes';

/* The refusals many routes share, by name: each is `#/components/responses/<name>` in the OpenAPI document. */

/** On an ingestion path's refusals: the request's origin, so that a page reads why (never on a refused preflight). */
const CORS_ON_REFUSAL = { 'Access-Control-Allow-Origin': { description: "A browser request's origin, so that a page can read why it was refused.", schema: { type: 'string' } } };

export const IngestBadRequest: Answer = { description: '`invalid_json` (not JSON) or `invalid_body` (not an object with a `batch` array, or not decompressible).', schema: ErrorShape, headers: CORS_ON_REFUSAL };
export const WriteKeyUnauthorized: Answer = { description: '`unauthorized` (missing or unknown write key) or `source_deleted` (the source was deleted while the body was read; nothing stored).', schema: ErrorShape, headers: { 'WWW-Authenticate': { description: 'Basic realm="eventrelay"', schema: { type: 'string' } }, ...CORS_ON_REFUSAL } };
export const OriginNotAllowed: Answer = { description: '`origin_not_allowed`: a browser request from an origin the source does not list in `allowedOrigins`.', schema: ErrorShape, headers: CORS_ON_REFUSAL };
export const BodyTooLarge: Answer = { description: '`body_too_large`: the body (decompressed too) is over the limit, in `error.limit`.', schema: ErrorShape };
export const IngestBodyTooLarge: Answer = { description: '`body_too_large`: the body (decompressed too) is over 500 KB, in `error.limit`.', schema: ErrorShape, headers: CORS_ON_REFUSAL };
export const UnsupportedEncoding: Answer = { description: '`unsupported_encoding`: a `Content-Encoding` other than gzip or deflate.', schema: ErrorShape, headers: CORS_ON_REFUSAL };
export const RateLimited: Answer = { description: "`rate_limited`: past the source's `ingestRateLimit`; nothing stored.", schema: ErrorShape, headers: { 'Retry-After': { description: 'Seconds.', schema: { type: 'string' } }, ...CORS_ON_REFUSAL } };
export const Unavailable: Answer = { description: '`shutting_down` or `unavailable` (the store failed); retry.', schema: ErrorShape, headers: { 'Retry-After': { description: 'Seconds.', schema: { type: 'string' } } } };
export const NotFound: Answer = { description: '`not_found`: no such route, source, key or delivery.', schema: ErrorShape };
export const MethodNotAllowed: Answer = { description: '`method_not_allowed`: the path takes other methods, listed in `Allow`.', schema: ErrorShape, headers: { Allow: { description: 'The methods the path takes.', schema: { type: 'string' } } } };
export const InvalidRequest: Answer = { description: '`invalid_request` (a bad field or parameter, named in `error.field`) or `invalid_json` (not a JSON object).', schema: ErrorShape };
export const AdminUnauthorized: Answer = { description: '`unauthorized`: missing or wrong admin token.', schema: ErrorShape, headers: { 'WWW-Authenticate': { description: 'Bearer realm="eventrelay-admin"', schema: { type: 'string' } } } };
export const AdminDisabled: Answer = { description: '`admin_disabled`: no `adminToken` in the config.', schema: ErrorShape };
export const Conflict: Answer = { description: '`conflict` (a name or key taken, an ambiguous URL) or `not_replayable` (says why).', schema: ErrorShape };
