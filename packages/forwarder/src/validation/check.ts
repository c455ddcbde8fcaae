import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import type { FormatsPlugin } from 'ajv-formats';
import { describeType, showValue } from 'eventrelay/internal';
import type { TSchema } from '@sinclair/typebox';

/*
 * The one schema checker of the forwarder: TypeBox schemas compiled by Ajv, every problem of a
 * value at once, each with its field path (`sources[1].destinations.Webhooks.webhooks[0].url`)
 * and what was expected and what came. The HTTP routes' bodies and queries and the config file
 * are checked with it (see http/routes/validate.ts and config/).
 */

// ajv-formats is CommonJS: its default export is the plugin under ESM, under `.default` in a CJS bundle.
const addFormats = ((addFormatsPlugin as unknown as { default?: FormatsPlugin }).default ?? addFormatsPlugin) as FormatsPlugin;

/** One problem of a value: the field at fault (a dotted path, `sources[0].name`) and what was expected and what came. */
export interface Problem {
  readonly field: string;
  readonly message: string;
}

/**
 * A check of one value: the problems, all at once (empty: valid). `base` is the value's own path
 * when it is part of a larger one (`sources[0].destinations.Webhooks`): fields are named from the top.
 */
export type Check = (value: unknown, base?: string) => readonly Problem[];

/**
 * Fields whose value may be a secret or carry one (a URL with a token, a header such as
 * `Authorization`): problems name their kind, never their content.
 */
const SECRET_FIELD = /secret|key|token|password|authorization|url|header/i;

/**
 * The keyword a schema may carry to say in words what it expects, where the words made from its
 * type would say less (`{ "env": NAME }` beside a string). An OpenAPI extension, so the served
 * document keeps it.
 */
export const EXPECTED = 'x-expected';

function newAjv(coerceTypes: boolean): Ajv {
  // Not `verbose`: an error's schema is looked up from its path when a problem is written
  // (`schemaAt`), so that the compiled checks stay small and compile fast at start-up.
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, coerceTypes, useDefaults: false, code: { optimize: false } });
  addFormats(ajv);
  // OpenAPI's keywords beside JSON Schema's.
  ajv.addVocabulary(['discriminator', 'example', EXPECTED]);
  return ajv;
}

/** Values as sent (bodies, the config file); query parameters come as strings, turned into the declared type (`limit=5` is 5). */
const asSent = newAjv(false);
const fromStrings = newAjv(true);

/** `a.b[0].c` from Ajv's JSON pointer `/a/b/0/c`; a key that is no identifier is quoted: `headers["X-Team"]`. */
function fieldOf(base: string, pointer: string, extra?: string): string {
  const parts = pointer === '' ? [] : pointer.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  let field = base;
  for (const p of parts) {
    if (/^\d+$/.test(p)) field += `[${p}]`;
    else if (!/^[A-Za-z_$][\w$]*$/.test(p)) field += `[${JSON.stringify(p)}]`;
    else field += field === '' ? p : `.${p}`;
  }
  return field;
}

/** What a schema expects, in words: "an integer from 0 to 604800", "one of `a`, `b`". */
export function expected(schema: Record<string, unknown> | undefined): string {
  if (schema === undefined) return 'a value';
  if (typeof schema[EXPECTED] === 'string') return schema[EXPECTED];
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
      if (typeof schema.maxItems === 'number') return `a list of ${schema.minItems ?? 0} to ${schema.maxItems} items`;
      return typeof schema.minItems === 'number' && schema.minItems > 0 ? `a list of at least ${schema.minItems} items` : 'a list';
    case 'object':
      return 'an object';
  }
  return 'a value';
}

/** What came, as a message may show it: for a field that may hold a secret, its kind only. */
function shown(field: string, value: unknown): string {
  if (Array.isArray(value)) return `${value.length} ${value.length === 1 ? 'entry' : 'entries'}`;
  return SECRET_FIELD.test(field) ? describeType(value) : showValue(value);
}

/** Whether `value` may be of `schema`'s type (of one of a union's; a schema without a type may take anything). */
function mayBe(schema: Record<string, unknown>, value: unknown): boolean {
  if (schema.const !== undefined) return schema.const === value;
  const types = typeof schema.type === 'string' ? [schema.type] : Array.isArray(schema.type) ? (schema.type as string[]) : undefined;
  if (types === undefined) {
    const union = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
    return union === undefined || union.some((b) => mayBe(b, value));
  }
  const actual = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  return types.some((t) => t === actual || (t === 'integer' && actual === 'number'));
}

/** The schema at an error's `schemaPath` (`#/properties/a/anyOf/0/type`); `up` segments fewer for its parent. */
function schemaAt(root: TSchema, path: string, up = 0): unknown {
  const parts = path.split('/').slice(1);
  let node: unknown = root;
  for (const p of parts.slice(0, parts.length - up)) node = (node as Record<string, unknown> | undefined)?.[decodeURIComponent(p).replace(/~1/g, '/').replace(/~0/g, '~')];
  return node;
}

/** Ajv's errors as problems: one per field, the outermost of each (a union's branches give one). */
function problemsOf(errors: readonly ErrorObject[], root: unknown, noun: string, top: string, base: string, schema: TSchema): Problem[] {
  const found: ErrorObject[] = errors.map((e) => ({ ...e, schema: schemaAt(schema, e.schemaPath), parentSchema: schemaAt(schema, e.schemaPath, 1) as ErrorObject['parentSchema'] }));
  const byField = new Map<string, Problem>();
  const valueAt = (pointer: string): unknown => {
    let value = root;
    for (const p of pointer === '' ? [] : pointer.slice(1).split('/')) value = (value as Record<string, unknown> | undefined)?.[p.replace(/~1/g, '/').replace(/~0/g, '~')];
    return value;
  };
  // A union whose value has the type of one branch only is that branch: its errors say more
  // (`metrics.port` is unknown) than the union's (`metrics` is `false` or an object).
  const unions = new Set<ErrorObject>();
  const dropped: { readonly instancePath: string; readonly schemaPath: string }[] = [];
  for (const e of found) {
    if (e.keyword !== 'anyOf' && e.keyword !== 'oneOf') continue;
    const branches = e.schema as Record<string, unknown>[];
    const value = valueAt(e.instancePath);
    const may = branches.map((b) => mayBe(b, value));
    if (may.filter(Boolean).length !== 1) continue;
    unions.add(e);
    may.forEach((m, i) => {
      if (!m) dropped.push({ instancePath: e.instancePath, schemaPath: `${e.schemaPath}/${i}/` });
    });
  }
  // Schema paths repeat over a list's items: a dropped branch is one value's.
  const isDropped = (e: ErrorObject): boolean =>
    dropped.some((d) => e.schemaPath.startsWith(d.schemaPath) && (e.instancePath === d.instancePath || e.instancePath.startsWith(`${d.instancePath}/`)));
  for (const e of found) {
    if (unions.has(e) || isDropped(e)) continue;
    let problem: Problem;
    if (e.keyword === 'additionalProperties') {
      const key = (e.params as { additionalProperty: string }).additionalProperty;
      const known = Object.keys((e.parentSchema?.properties as object | undefined) ?? {}).filter((k) => !k.startsWith('$'));
      const field = fieldOf(base, e.instancePath, key);
      problem = { field, message: `Unknown ${noun} \`${field}\`${known.length === 0 ? '' : `; expected ${known.map((k) => `\`${k}\``).join(', ')}`}` };
    } else if (e.keyword === 'required') {
      const key = (e.params as { missingProperty: string }).missingProperty;
      const field = fieldOf(base, e.instancePath, key);
      const schema = (e.parentSchema?.properties as Record<string, Record<string, unknown>> | undefined)?.[key];
      problem = { field, message: `Expected \`${field}\` to be ${expected(schema)}, got nothing` };
    } else {
      const field = fieldOf(base, e.instancePath);
      // A union's branches each fail: the union's own error (anyOf, oneOf) says it whole.
      const union = e.keyword === 'anyOf' || e.keyword === 'oneOf';
      const what = expected(union ? (typeof e.parentSchema?.[EXPECTED] === 'string' ? e.parentSchema : { [e.keyword]: e.schema }) : e.parentSchema);
      problem = { field, message: `Expected ${field === '' ? top : `\`${field}\``} to be ${what}, got ${shown(field, valueAt(e.instancePath))}` };
    }
    const before = byField.get(problem.field);
    // The union's error comes after its branches' ones: it replaces them.
    if (before === undefined || e.keyword === 'anyOf' || e.keyword === 'oneOf') byField.set(problem.field, problem);
  }
  // A branch's error inside a union names a field the union's error names too: keep the outer one.
  return [...byField.values()].filter((p, _, all) => !all.some((o) => o !== p && o.field !== '' && (p.field.startsWith(`${o.field}.`) || p.field.startsWith(`${o.field}[`))));
}

export interface CheckOptions {
  /** What an unknown key is called in a message. Default `field`. */
  readonly noun?: 'field' | 'parameter';
  /** Values come as strings (a query) and are turned into the declared types. Default false. */
  readonly fromStrings?: boolean;
  /** How a message names the value itself (its field ''). Default ``the body`` (with its backquotes). */
  readonly top?: string;
}

/** Compiles `schema` once (a schema Ajv refuses fails here, at start-up); the check answers every problem at once. */
export function compileCheck(schema: TSchema, options: CheckOptions = {}): Check {
  const validate: ValidateFunction = (options.fromStrings === true ? fromStrings : asSent).compile(schema);
  const noun = options.noun ?? 'field';
  const top = options.top ?? '`the body`';
  return (value, base = '') => (validate(value) ? [] : problemsOf(validate.errors ?? [], value, noun, top, base, schema));
}

/** `compileCheck`, compiled when first used: for checks seldom run (admin API bodies), kept out of start-up. */
export function lazyCheck(schema: TSchema, options: CheckOptions = {}): Check {
  let check: Check | undefined;
  return (value, base) => (check ??= compileCheck(schema, options))(value, base);
}
