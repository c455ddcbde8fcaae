// Benchmark: what checking a typical admin request body costs with each library the route
// declarations could use (issue 41): TypeBox schemas compiled by Ajv (what the forwarder uses),
// TypeBox's own TypeCompiler, and zod 3 (bench/package.json). One schema, written in each
// library: a source's Webhooks destination as `PUT /admin/sources/{name}/destinations/Webhooks`
// takes it (two URLs with headers, a rate limit and a filter). A valid body, and a body with three
// bad fields where every problem is collected (the forwarder answers all of them at once).
// Each validator is compiled once, as the forwarder does at start-up; rounds alternate after a
// warm-up and the median round counts. Ingestion bodies are not part of it: they are checked by
// the shared rules of eventrelay/internal, once, whatever the admin routes use.
// Run: npm --prefix bench ci && node bench/admin-validation.mjs   (ROUNDS=15 by default)
import { Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Ajv } from 'ajv';
import { createRequire } from 'node:module';

const require = createRequire(new URL('./package.json', import.meta.url));
const { z } = require('zod');
const ROUNDS = Number(process.env.ROUNDS ?? 15);
const N = 20_000;

const Filter = Type.Object(
  { types: Type.Optional(Type.Array(Type.String())), events: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: false },
);
const Url = Type.Object(
  {
    url: Type.String({ minLength: 1 }),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    rateLimit: Type.Optional(Type.Object({ perSecond: Type.Number({ exclusiveMinimum: 0 }) }, { additionalProperties: false })),
    filter: Type.Optional(Filter),
  },
  { additionalProperties: false },
);
const Destination = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    sharedSecret: Type.Optional(Type.String({ minLength: 1 })),
    signing: Type.Optional(Type.Union([Type.Literal('legacy'), Type.Literal('standard'), Type.Literal('both')])),
    ordering: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('user')])),
    webhooks: Type.Array(Url, { minItems: 1, maxItems: 5 }),
  },
  { additionalProperties: false },
);

const zFilter = z.object({ types: z.array(z.string()).optional(), events: z.array(z.string()).optional() }).strict();
const zUrl = z
  .object({
    url: z.string().min(1),
    headers: z.record(z.string(), z.string()).optional(),
    rateLimit: z.object({ perSecond: z.number().gt(0) }).strict().optional(),
    filter: zFilter.optional(),
  })
  .strict();
const zDestination = z
  .object({
    enabled: z.boolean().optional(),
    sharedSecret: z.string().min(1).optional(),
    signing: z.enum(['legacy', 'standard', 'both']).optional(),
    ordering: z.enum(['none', 'user']).optional(),
    webhooks: z.array(zUrl).min(1).max(5),
  })
  .strict();

const valid = {
  sharedSecret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=',
  signing: 'both',
  ordering: 'user',
  webhooks: [
    { url: 'https://hooks.example.com/a?token=t', headers: { 'X-Team': 'growth', 'X-Env': 'prod' }, rateLimit: { perSecond: 10 }, filter: { types: ['track'] } },
    { url: 'https://hooks.example.com/b', filter: { events: ['Order Completed', 'Signed Up'] } },
  ],
};
const invalid = { ...valid, signing: 'all', webhooks: [{ ...valid.webhooks[0], rateLimit: { perSecond: 0 } }, { url: '' }] };

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
const ajvCheck = ajv.compile(Destination);
const typeboxCheck = TypeCompiler.Compile(Destination);
const contenders = {
  'TypeBox + Ajv (allErrors)': (body) => (ajvCheck(body) ? 0 : ajvCheck.errors.length),
  'TypeBox TypeCompiler': (body) => (typeboxCheck.Check(body) ? 0 : [...typeboxCheck.Errors(body)].length),
  'zod 3 (safeParse)': (body) => {
    const r = zDestination.safeParse(body);
    return r.success ? 0 : r.error.issues.length;
  },
};

for (const [name, check] of Object.entries(contenders)) {
  if (check(valid) !== 0) throw new Error(`${name} refused the valid body`);
  if (check(invalid) < 3) throw new Error(`${name} found fewer than 3 problems in the invalid body`);
}

function round(check, body) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) check(body);
  return Number(process.hrtime.bigint() - start) / N;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = {};
for (const [name, check] of Object.entries(contenders)) {
  round(check, valid);
  round(check, invalid);
  results[name] = { valid: [], invalid: [] };
}
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, check] of Object.entries(contenders)) {
    results[name].valid.push(round(check, valid));
    results[name].invalid.push(round(check, invalid));
  }
}
console.log(`| validator | valid body (ns) | body with 3 problems, all collected (ns) |`);
console.log(`|---|---|---|`);
for (const [name, r] of Object.entries(results)) console.log(`| ${name} | ${median(r.valid).toFixed(0)} | ${median(r.invalid).toFixed(0)} |`);
