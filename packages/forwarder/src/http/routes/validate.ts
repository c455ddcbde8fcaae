import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import type { FormatsPlugin } from 'ajv-formats';
import { describeType, showValue } from 'eventrelay/internal';
import type { TSchema } from '@sinclair/typebox';
import type { RouteSpec } from './define';

// ajv-formats is CommonJS: its default export is the plugin under ESM, under `.default` in a CJS bundle.
const addFormats = ((addFormatsPlugin as unknown as { default?: FormatsPlugin }).default ?? addFormatsPlugin) as FormatsPlugin;

/** One problem of a request: the field at fault (a dotted path, `sources[0].name`) and what was expected and what came. */
export interface Problem {
  readonly field: string;
  readonly message: string;
}

/** A check of one part of a request: the problems, all at once (empty: valid). */
export type Check = (value: unknown) => readonly Problem[];

/** Fields whose value may be a secret: problems name their kind, never their content. */
const SECRET_FIELD = /secret|key|token|password|authorization/i;

function newAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, coerceTypes, useDefaults: false, verbose: true });
  addFormats(ajv);
  // OpenAPI's keywords beside JSON Schema's.
  ajv.addVocabulary(['discriminator', 'example']);
  return ajv;
}

/** Bodies as sent; query parameters come as strings, turned into the declared type (`limit=5` is 5). */
const bodies = newAjv(false);
const queries = newAjv(true);

/** `a.b[0].c` from Ajv's JSON pointer `/a/b/0/c`. */
function fieldOf(pointer: string, extra?: string): string {
  const parts = pointer === '' ? [] : pointer.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  let field = '';
  for (const p of parts) field += /^\d+$/.test(p) ? `[${p}]` : field === '' ? p : `.${p}`;
  return field;
}

/** What a schema expects, in words: "an integer from 0 to 604800", "one of `a`, `b`". */
export function expected(schema: Record<string, unknown> | undefined): string {
  if (schema === undefined) return 'a value';
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => `\`${String(v)}\``).join(', ')}`;
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) return (schema[key] as Record<string, unknown>[]).map(expected).join(' or ');
  }
  if (Array.isArray(schema.type)) return (schema.type as string[]).map((t) => expected({ ...schema, type: t })).join(' or ');
  const range = (unit: string): string => {
    const { minimum: min, maximum: max } = schema as { minimum?: number; maximum?: number };
    if (min !== undefined && max !== undefined) return `${unit} from ${min} to ${max}`;
    if (min !== undefined) return min === 0 ? `${unit} of 0 or more` : `${unit} of at least ${min}`;
    if (max !== undefined) return `${unit} of at most ${max}`;
    return unit;
  };
  switch (schema.type) {
    case 'string':
      if (schema.format === 'date-time') return 'an ISO 8601 time';
      if (schema.format === 'uri') return 'a URL';
      if (typeof schema.maxLength === 'number') return `a string of ${schema.minLength ?? 0} to ${schema.maxLength} characters`;
      return typeof schema.minLength === 'number' && schema.minLength > 0 ? 'a non-empty string' : 'a string';
    case 'integer':
      return range('an integer');
    case 'number':
      return range('a number');
    case 'boolean':
      return 'true or false';
    case 'null':
      return 'null';
    case 'array':
      return typeof schema.maxItems === 'number' ? `a list of ${schema.minItems ?? 0} to ${schema.maxItems} items` : 'a list';
    case 'object':
      return 'an object';
  }
  return 'a value';
}

function shown(field: string, value: unknown): string {
  return SECRET_FIELD.test(field) ? describeType(value) : showValue(value);
}

/** Ajv's errors as problems: one per field, the outermost of each (a union's branches give one). */
function problemsOf(errors: readonly ErrorObject[], root: unknown, noun: string): Problem[] {
  const byField = new Map<string, Problem>();
  const valueAt = (pointer: string): unknown => {
    let value = root;
    for (const p of pointer === '' ? [] : pointer.slice(1).split('/')) value = (value as Record<string, unknown> | undefined)?.[p.replace(/~1/g, '/').replace(/~0/g, '~')];
    return value;
  };
  for (const e of errors) {
    let problem: Problem;
    if (e.keyword === 'additionalProperties') {
      const key = (e.params as { additionalProperty: string }).additionalProperty;
      const known = Object.keys((e.parentSchema?.properties as object | undefined) ?? {});
      const field = fieldOf(e.instancePath, key);
      problem = { field, message: `Unknown ${noun} \`${field}\`${known.length === 0 ? '' : `; expected ${known.map((k) => `\`${k}\``).join(', ')}`}` };
    } else if (e.keyword === 'required') {
      const key = (e.params as { missingProperty: string }).missingProperty;
      const field = fieldOf(e.instancePath, key);
      const schema = (e.parentSchema?.properties as Record<string, Record<string, unknown>> | undefined)?.[key];
      problem = { field, message: `Expected \`${field}\` to be ${expected(schema)}, got nothing` };
    } else {
      const field = fieldOf(e.instancePath);
      // A union's branches each fail: the union's own error (anyOf, oneOf) says it whole.
      const schema = e.keyword === 'anyOf' || e.keyword === 'oneOf' ? e.schema : e.parentSchema;
      const what = e.keyword === 'anyOf' || e.keyword === 'oneOf' ? expected({ [e.keyword]: schema }) : expected(schema as Record<string, unknown> | undefined);
      problem = { field, message: `Expected \`${field === '' ? 'the body' : field}\` to be ${what}, got ${shown(field, valueAt(e.instancePath))}` };
    }
    const before = byField.get(problem.field);
    // The union's error comes after its branches' ones: it replaces them.
    if (before === undefined || e.keyword === 'anyOf' || e.keyword === 'oneOf') byField.set(problem.field, problem);
  }
  // A branch's error inside a union names a field the union's error names too: keep the outer one.
  return [...byField.values()].filter((p, _, all) => !all.some((o) => o !== p && o.field !== '' && (p.field.startsWith(`${o.field}.`) || p.field.startsWith(`${o.field}[`))));
}

function checkWith(ajv: Ajv, schema: TSchema, noun: 'field' | 'parameter'): Check {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value) => (validate(value) ? [] : problemsOf(validate.errors ?? [], value, noun));
}

/** The checks of a route, compiled once. */
export interface RouteChecks {
  readonly query?: Check;
  readonly body?: Check;
}

/** Compiles the checks of every route (at start-up: a schema Ajv refuses fails then, not at the first request). */
export function compileChecks(routes: readonly RouteSpec[]): Map<RouteSpec, RouteChecks> {
  const checks = new Map<RouteSpec, RouteChecks>();
  for (const r of routes) {
    checks.set(r, {
      ...(r.query === undefined || r.queryCheckedBy === 'handler' ? {} : { query: checkWith(queries, r.query, 'parameter') }),
      ...(r.body === undefined || r.body.checkedBy === 'handler' ? {} : { body: checkWith(bodies, r.body.schema, 'field') }),
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
