// @ts-check
/* The admin API as the page calls it. The admin token lives in sessionStorage and travels only in
 * the Authorization header. The answers and bodies are typed from the route declarations
 * (http/routes/, TypeBox): a field the API does not have fails the typecheck. Those are types
 * only, read by `tsc` (npm run typecheck); the browser loads nothing of the server. */

/**
 * @typedef {[
 *   ...typeof import('../http/routes/delivery-log').DELIVERY_LOG_ROUTES,
 *   ...typeof import('../http/routes/sources').SOURCES_ROUTES,
 *   ...typeof import('../http/routes/sources').TRANSFORM_ROUTES,
 *   ...typeof import('../http/routes/endpoints').ENDPOINTS_ROUTES,
 *   ...typeof import('../http/routes/schema').SCHEMA_ROUTES,
 *   ...typeof import('../http/routes/operations').OPERATIONS_ROUTES,
 * ][number]} PageRoute
 */
/** @typedef {PageRoute['operationId']} OperationId */
/**
 * The schema of a route's answer of success (200, 201 or 202).
 * @template R
 * @typedef {R extends { 200: { schema: infer S } } ? S
 *   : R extends { 201: { schema: infer S } } ? S
 *   : R extends { 202: { schema: infer S } } ? S
 *   : never} SuccessSchema
 */
/**
 * What a route answers, by operationId.
 * @template {OperationId} Op
 * @typedef {import('@sinclair/typebox').Static<SuccessSchema<Extract<PageRoute, { operationId: Op }>['responses']>>} Answer
 */
/**
 * The body a route takes, by operationId.
 * @template {OperationId} Op
 * @typedef {Extract<PageRoute, { operationId: Op }> extends { body: { schema: infer S extends import('@sinclair/typebox').TSchema } }
 *   ? import('@sinclair/typebox').Static<S>
 *   : never} Body
 */
/** @typedef {Answer<'overview'>} Overview */
/** @typedef {Answer<'getDelivery'>} Delivery */
/** @typedef {Answer<'listMessages'>['items'][number]} LoggedMessage */
/** @typedef {Answer<'getSource'>} Source */
/** @typedef {NonNullable<Source['destinations']['Webhooks']>} Webhooks */
/** @typedef {Answer<'getSourceSchema'>} ShownSchema */
/** @typedef {Body<'putWebhooks'>} WebhooksInput */
/** @typedef {Body<'patchWebhooks'>} WebhooksChange */
/** @typedef {Body<'putSourceSchema'>} SchemaInput */
/** @typedef {Body<'testTransform'>} TransformTest */

const TOKEN_KEY = 'eventrelay.adminToken';

/** @type {string | null} */
let token = sessionStorage.getItem(TOKEN_KEY);
/** @type {(message: string) => void} */
let refusedHandler = () => {};

/** Whether the tab holds a token. */
export function hasToken() {
  return Boolean(token);
}

/**
 * Keeps the token for this tab (sessionStorage).
 * @param {string} value
 */
export function keepToken(value) {
  token = value;
  sessionStorage.setItem(TOKEN_KEY, value);
}

/** Forgets the token (sign out). */
export function forgetToken() {
  token = null;
  sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * What to do when the API refuses the token (401): the page signs out with this message.
 * @param {(message: string) => void} handler
 */
export function onTokenRefused(handler) {
  refusedHandler = handler;
}

/** The API refused the token: the page signs out. */
export function tokenRefused() {
  refusedHandler('The admin token was refused: sign in again.');
}

/**
 * Whether an error is the refusal of the token, already told by signing out (nothing more to show).
 * @param {unknown} error
 */
export function isUnauthorized(error) {
  return error instanceof Error && error.message === 'unauthorized';
}

/**
 * The message of an error, to show.
 * @param {unknown} error
 */
export function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Calls the admin API; the JSON answer, or an error with the API's message (and field).
 * @template T
 * @param {string} path
 * @param {{ method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', body?: unknown }} [options]
 * @returns {Promise<T>}
 */
async function call(path, options) {
  /** @type {Record<string, string>} */
  const headers = { Authorization: `Bearer ${token}` };
  /** @type {RequestInit} */
  const init = { method: 'GET', cache: 'no-store', headers };
  if (options && options.body !== undefined) {
    init.method = options.method || 'POST';
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  } else if (options && options.method) {
    init.method = options.method;
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (response.status === 401) {
    tokenRefused();
    throw new Error('unauthorized');
  }
  if (!response.ok) {
    /** @type {{ message: string, field?: string } | undefined} */
    const error = json && json.error;
    throw new Error(error ? `${error.message}${error.field ? ` (${error.field})` : ''}` : `HTTP ${response.status}`);
  }
  return json;
}

/**
 * The path of a source's route.
 * @param {string} name
 * @param {string} [rest]
 */
function sourcePath(name, rest) {
  return `/admin/sources/${encodeURIComponent(name)}${rest || ''}`;
}

/**
 * The live stream of a source (or of all): the open response, read by the caller.
 * @param {string} source
 * @param {AbortSignal} signal
 */
export function openStream(source, signal) {
  const path = `/admin/stream${source ? `?${new URLSearchParams({ source })}` : ''}`;
  return fetch(path, { headers: { Authorization: `Bearer ${token}` }, signal, cache: 'no-store' });
}

/** @returns {Promise<Overview>} */
export const getOverview = () => call('/admin/overview');

/**
 * @param {URLSearchParams} params
 * @returns {Promise<Answer<'listMessages'>>}
 */
export const listMessages = (params) => call(`/admin/messages?${params}`);

/**
 * @param {number} id
 * @returns {Promise<Delivery>}
 */
export const getDelivery = (id) => call(`/admin/deliveries/${encodeURIComponent(id)}`);

/**
 * @param {number} id
 * @returns {Promise<Answer<'replayDelivery'>>}
 */
export const replayDelivery = (id) => call(`/admin/deliveries/${encodeURIComponent(id)}/replay`, { method: 'POST', body: {} });

/**
 * @param {Body<'recover'>} body
 * @returns {Promise<Answer<'recover'>>}
 */
export const recover = (body) => call('/admin/recover', { body });

/**
 * @param {string} source
 * @param {string} url
 * @returns {Promise<Answer<'enableEndpoint'>>}
 */
export const enableEndpoint = (source, url) => call(sourcePath(source, '/destinations/Webhooks/endpoints/enable'), { body: { url } });

/** @returns {Promise<Answer<'listSources'>>} */
export const listSources = () => call('/admin/sources');

/**
 * @param {Body<'createSource'>} body
 * @returns {Promise<Answer<'createSource'>>}
 */
export const createSource = (body) => call('/admin/sources', { body });

/**
 * @param {string} name
 * @returns {Promise<Answer<'deleteSource'>>}
 */
export const deleteSource = (name) => call(sourcePath(name), { method: 'DELETE' });

/**
 * @param {string} name
 * @param {Body<'rotateWriteKey'>} body
 * @returns {Promise<Answer<'rotateWriteKey'>>}
 */
export const rotateWriteKey = (name, body) => call(sourcePath(name, '/write-keys'), { body });

/**
 * @param {string} name
 * @param {Body<'putSourceSettings'>} body
 * @returns {Promise<Answer<'putSourceSettings'>>}
 */
export const putSettings = (name, body) => call(sourcePath(name, '/settings'), { method: 'PUT', body });

/**
 * @param {string} name
 * @param {WebhooksInput} body
 * @returns {Promise<Answer<'putWebhooks'>>}
 */
export const putWebhooks = (name, body) => call(sourcePath(name, '/destinations/Webhooks'), { method: 'PUT', body });

/**
 * @param {string} name
 * @param {WebhooksChange} body
 * @returns {Promise<Answer<'patchWebhooks'>>}
 */
export const patchWebhooks = (name, body) => call(sourcePath(name, '/destinations/Webhooks'), { method: 'PATCH', body });

/**
 * @param {string} name
 * @param {Body<'testWebhooks'>} body
 * @returns {Promise<Answer<'testWebhooks'>>}
 */
export const testWebhooks = (name, body) => call(sourcePath(name, '/destinations/Webhooks/test'), { body });

/**
 * @param {string} name
 * @returns {Promise<ShownSchema>}
 */
export const getSchema = (name) => call(sourcePath(name, '/schema'));

/**
 * @param {string} name
 * @param {SchemaInput} body
 * @returns {Promise<Answer<'putSourceSchema'>>}
 */
export const putSchema = (name, body) => call(sourcePath(name, '/schema'), { method: 'PUT', body });

/** @returns {Promise<Answer<'usage'>>} */
export const getUsage = () => call('/admin/usage');

/**
 * Runs a transform's code once on a message (nothing stored or sent): its output, or an error
 * that says why it failed or where it does not compile.
 * @param {TransformTest} body
 * @returns {Promise<Answer<'testTransform'>>}
 */
export const testTransform = (body) => call('/admin/transform/test', { body });
