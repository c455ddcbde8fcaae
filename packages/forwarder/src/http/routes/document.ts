import type { TSchema } from '@sinclair/typebox';
import { EXPECTED } from '../../validation/check';
import type { Answer, RouteSpec } from './define';
import * as ANSWERS from './answers';
import * as SHAPES from './shapes';

type Json = Record<string, unknown>;

const TAGS = [
  { name: 'ingestion', description: 'Where SDKs send calls.' },
  { name: 'operations', description: 'Health, counts, metrics, this document.' },
  { name: 'delivery log', description: 'Every call and attempt; replay and recover.' },
  { name: 'deletions and audiences', description: 'Spec 2.3 and 6.' },
  { name: 'sources', description: 'Runtime setup of sources and their Webhooks destination.' },
  { name: 'endpoints', description: 'Endpoint protection: disabled URLs.' },
  { name: 'schema and usage', description: 'Source schema controls and usage counts.' },
  { name: 'debugger', description: "The debugger page's files." },
];

const DESCRIPTION =
  'Every refusal is `{ "success": false, "error": { "code", "message" } }` (`components.responses`): a path that does not exist is a 404 `not_found`, a method a path does not take a 405 `method_not_allowed` with `Allow`, and any route answers 503 while the forwarder shuts down. A request with bad fields is a 400 `invalid_request` naming the first in `field` and every one in `problems`. Ingestion takes the write key as Basic auth (`base64(writeKey + ":")`) or as `writeKey` in the body; `/admin/` routes take `Authorization: Bearer <adminToken>`. GET routes answer HEAD too. Served at `GET /openapi.json`; the package ships it as `@eventrelay/forwarder/openapi.json`. Generated from the forwarder\'s route declarations (src/http/routes/).';

/** The named shapes and answers, by object: where a route uses one, the document refers to its component. */
const SHAPE_NAMES = new Map<object, string>(Object.entries(SHAPES).map(([name, schema]) => [schema, name === 'ErrorShape' ? 'Error' : name]));
const ANSWER_NAMES = new Map<object, string>(Object.entries(ANSWERS).map(([name, answer]) => [answer, name]));

/** Builds the document's components as routes use them: only what some route refers to is listed. */
class Components {
  readonly schemas: Record<string, Json> = {};
  readonly responses: Record<string, Json> = {};

  /** A schema as JSON, each named shape inside it (or itself) a `$ref`. */
  schema(schema: TSchema, top = false): Json {
    const name = SHAPE_NAMES.get(schema);
    if (name !== undefined && !top) {
      if (!(name in this.schemas)) {
        this.schemas[name] = {};
        this.schemas[name] = this.schema(schema, true);
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    return this.copy(schema) as Json;
  }

  private copy(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => (typeof v === 'object' && v !== null && SHAPE_NAMES.has(v) ? this.schema(v as TSchema) : this.copy(v)));
    if (typeof value !== 'object' || value === null) return value;
    const out: Json = {};
    // Object.entries skips TypeBox's symbol keys (its Kind and Optional marks).
    for (const [key, v] of Object.entries(value)) {
      // The checker's words for what a schema expects are for its messages, not the document.
      if (key === EXPECTED) continue;
      out[key] = typeof v === 'object' && v !== null && !Array.isArray(v) && SHAPE_NAMES.has(v) ? this.schema(v as TSchema) : this.copy(v);
    }
    return out;
  }

  answer(answer: Answer): Json {
    const name = ANSWER_NAMES.get(answer);
    if (name !== undefined) {
      if (!(name in this.responses)) this.responses[name] = this.inline(answer);
      return { $ref: `#/components/responses/${name}` };
    }
    return this.inline(answer);
  }

  private inline(answer: Answer): Json {
    const types = answer.contentType === undefined ? ['application/json'] : typeof answer.contentType === 'string' ? [answer.contentType] : answer.contentType;
    return {
      description: answer.description,
      ...(answer.headers === undefined ? {} : { headers: answer.headers }),
      ...(answer.schema === undefined ? {} : { content: Object.fromEntries(types.map((t) => [t, { schema: this.schema(answer.schema!) }])) }),
    };
  }
}

function parameters(components: Components, where: 'path' | 'query', object: RouteSpec['params']): Json[] {
  if (object === undefined) return [];
  const required = new Set(object.required ?? []);
  return Object.entries(object.properties).map(([name, schema]) => {
    const { description, ...rest } = components.schema(schema);
    return { name, in: where, required: where === 'path' || required.has(name), ...(description === undefined ? {} : { description }), schema: rest };
  });
}

function security(auth: RouteSpec['auth']): Json {
  if (auth === 'admin') return {};
  return { security: auth === 'none' ? [] : [{ writeKey: [] }, {}] };
}

/** A preflight's operation: what the CORS code answers (see server.ts). */
function preflightOperation(r: RouteSpec, components: Components): Json {
  return {
    tags: r.tags,
    operationId: `${r.operationId}Preflight`,
    summary: r.preflight!.summary,
    description: r.preflight!.description,
    security: [],
    responses: {
      204: {
        description: 'Allowed: the CORS headers (`Access-Control-Allow-Origin`, `-Methods`, `-Headers`, `-Max-Age`), or `Allow` for a request without `Origin`.',
        headers: { 'Access-Control-Allow-Origin': { schema: { type: 'string' } }, Allow: { schema: { type: 'string' } } },
      },
      403: components.answer(ANSWERS.OriginNotAllowed),
    },
  };
}

/** The OpenAPI 3.1 document of the routes: paths in declaration order, components as used. */
/**
 * The refusals every admin route gives before its handler runs (the Bearer check, admin off, shutting
 * down): derived from `auth`, so no declaration repeats them.
 */
const ADMIN_REFUSALS: Readonly<Record<number, Answer>> = { 401: ANSWERS.AdminUnauthorized, 403: ANSWERS.AdminDisabled, 503: ANSWERS.Unavailable };

/** A route's documented answers: its own, and the admin refusals when it takes the admin token. */
function answersOf(r: RouteSpec): Readonly<Record<number, Answer>> {
  return r.auth === 'admin' ? { ...r.responses, ...ADMIN_REFUSALS } : r.responses;
}

export function buildDocument(routes: readonly RouteSpec[], version: string): Json {
  const components = new Components();
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    const item = (paths[r.path] ??= {});
    const params = [...parameters(components, 'path', r.params), ...parameters(components, 'query', r.query)];
    item[r.method.toLowerCase()] = {
      tags: r.tags,
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description === undefined ? {} : { description: r.description }),
      ...security(r.auth),
      ...(params.length === 0 ? {} : { parameters: params }),
      ...(r.body === undefined
        ? {}
        : {
            requestBody: {
              required: r.body.required,
              ...(r.body.description === undefined ? {} : { description: r.body.description }),
              content: Object.fromEntries((r.body.contentType ?? ['application/json']).map((t) => [t, { schema: components.schema(r.body!.schema) }])),
            },
          }),
      responses: Object.fromEntries(Object.entries(answersOf(r)).map(([status, answer]) => [status, components.answer(answer)])),
    };
    if (r.preflight !== undefined) {
      item.options = preflightOperation(r, components);
      if (r.params !== undefined) item.options.parameters = parameters(components, 'path', r.params);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'eventrelay forwarder',
      version,
      summary: 'Ingestion (Segment-compatible) and admin API of the eventrelay forwarding service.',
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: 'http://127.0.0.1:8787', description: '`eventrelay serve` with its defaults' }],
    tags: TAGS,
    paths,
    components: {
      securitySchemes: {
        writeKey: { type: 'http', scheme: 'basic', description: 'The source\'s write key as the user name, empty password: `Authorization: Basic base64(writeKey + ":")`.' },
        adminToken: { type: 'http', scheme: 'bearer', description: "The config's `adminToken`: `Authorization: Bearer <adminToken>`." },
      },
      schemas: components.schemas,
      responses: components.responses,
    },
    security: [{ adminToken: [] }],
  };
}
