import type { Static, TObject, TSchema } from '@sinclair/typebox';

/** The methods a route may declare (HEAD is answered as GET, OPTIONS by the CORS code). */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Who may call a route: anyone, a source's write key (Basic auth or `writeKey` in the body), or the admin token (Bearer). */
export type Auth = 'none' | 'writeKey' | 'admin';

/** One documented answer of a route: its description, and the schema of its body (none: no body). */
export interface Answer {
  readonly description: string;
  readonly schema?: TSchema;
  /** Default `application/json`; several when the same body goes under each. */
  readonly contentType?: string | readonly string[];
  readonly headers?: Readonly<Record<string, unknown>>;
}

/** A route's request body. */
export interface RouteBody {
  readonly schema: TSchema;
  readonly required: boolean;
  readonly description?: string;
  /** Default `application/json`. */
  readonly contentType?: readonly string[];
  /**
   * Who checks the body: 'schema' (default) compiles the schema into a validator run before the
   * handler; 'handler' documents the schema only, for a body checked by rules shared with another
   * reader (the ingestion rules of `eventrelay/internal`, the config file's rules).
   */
  readonly checkedBy?: 'schema' | 'handler';
  /** Largest body, in bytes: past it 413 `body_too_large` (ingestion: its own limit, 500 KB). */
  readonly limit?: number;
}

/** One HTTP route: everything dispatch, validation, handler types and the OpenAPI document need. */
export interface RouteSpec {
  readonly method: Method;
  /** OpenAPI path template: `/admin/sources/{name}`. */
  readonly path: string;
  readonly auth: Auth;
  readonly operationId: string;
  readonly tags: readonly string[];
  readonly summary: string;
  readonly description?: string;
  /**
   * The path's parameters, percent-decoded and then checked by this schema (a 400 naming the
   * parameter). The library settings route alone answers its key itself: a key it does not know,
   * however long, is a 404 there.
   */
  readonly params?: TObject;
  /** The query's parameters; unknown ones are refused. */
  readonly query?: TObject;
  /** Who checks the query (see RouteBody.checkedBy). */
  readonly queryCheckedBy?: 'schema' | 'handler';
  readonly body?: RouteBody;
  /** A path browsers call: it answers OPTIONS preflights (documented with this summary). */
  readonly preflight?: { readonly summary: string; readonly description: string };
  readonly responses: Readonly<Record<number, Answer>>;
}

/** Declares a route; the literal types are kept, so that its handler's input is typed from its schemas. */
export function route<const R extends RouteSpec>(spec: R): R {
  return spec;
}

type StaticOf<S, Else> = S extends TSchema ? Static<S> : Else;

/** What a route's handler gets: its path parameters (decoded), query and body, typed from the declaration. */
export interface RouteInput<R extends RouteSpec> {
  readonly params: StaticOf<R['params'], Record<string, never>>;
  readonly query: StaticOf<R['query'], Record<string, never>>;
  readonly body: R['body'] extends RouteBody ? (R['body']['checkedBy'] extends 'handler' ? Record<string, unknown> : Static<R['body']['schema']>) : undefined;
}

export { Enum, Nullable, OneOf } from '../../validation/kinds';

/** The segments of a template: a literal, or `{name}`. */
function segmentsOf(template: string): readonly (string | { readonly param: string })[] {
  return template
    .split('/')
    .slice(1)
    .map((s) => (s.startsWith('{') && s.endsWith('}') ? { param: s.slice(1, -1) } : s));
}

/** A request's route: the entry and its raw (still percent-encoded) path parameters. */
export interface RouteMatch<R extends RouteSpec = RouteSpec> {
  readonly route: R;
  readonly params: Readonly<Record<string, string>>;
}

/** What the table says of a request: its route, a 405 (the methods the path takes), or nothing. */
export type Lookup<R extends RouteSpec = RouteSpec> = { readonly found: RouteMatch<R> } | { readonly allow: readonly string[] } | undefined;

/**
 * The routes by path: a literal path is one map lookup (ingestion's paths), a path with
 * parameters is matched segment by segment. HEAD finds a GET route.
 */
export class RouteTable<R extends RouteSpec = RouteSpec> {
  private readonly literal = new Map<string, Map<string, R>>();
  private readonly templated: { readonly segments: ReturnType<typeof segmentsOf>; readonly methods: Map<string, R> }[] = [];

  constructor(readonly routes: readonly R[]) {
    const byTemplate = new Map<string, Map<string, R>>();
    for (const r of routes) {
      let methods = byTemplate.get(r.path);
      if (methods === undefined) byTemplate.set(r.path, (methods = new Map()));
      if (methods.has(r.method)) throw new Error(`route declared twice: ${r.method} ${r.path}`);
      methods.set(r.method, r);
    }
    for (const [template, methods] of byTemplate) {
      if (template.includes('{')) this.templated.push({ segments: segmentsOf(template), methods });
      else this.literal.set(template, methods);
    }
  }

  /** The methods a path takes, for `Allow` (HEAD beside GET). */
  static allow(methods: Iterable<string>): string[] {
    const list = [...methods];
    return list.includes('GET') ? [...list, 'HEAD'] : list;
  }

  lookup(method: string, path: string): Lookup<R> {
    const at = this.at(path);
    if (at === undefined) return undefined;
    const r = at.methods.get(method === 'HEAD' ? 'GET' : method);
    if (r === undefined) return { allow: RouteTable.allow(at.methods.keys()) };
    return { found: { route: r, params: at.params } };
  }

  /** The routes of a path by method, and its raw parameters; undefined for a path no route has. */
  at(path: string): { readonly methods: ReadonlyMap<string, R>; readonly params: Readonly<Record<string, string>> } | undefined {
    let methods = this.literal.get(path);
    let params: Record<string, string> = {};
    if (methods === undefined) {
      const parts = path.split('/').slice(1);
      for (const t of this.templated) {
        if (t.segments.length !== parts.length) continue;
        const found: Record<string, string> = {};
        const ok = t.segments.every((s, i) => {
          if (typeof s === 'string') return s === parts[i];
          found[s.param] = parts[i]!;
          return parts[i] !== '';
        });
        if (ok) {
          methods = t.methods;
          params = found;
          break;
        }
      }
      if (methods === undefined) return undefined;
    }
    return { methods, params };
  }
}
