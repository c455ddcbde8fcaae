import pg from 'pg';
import { readFileSync } from 'node:fs';
const c = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
await c.connect();
const pid = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
const cpu = () => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) * 10000; };
await c.query('DROP TABLE IF EXISTS tj; CREATE UNLOGGED TABLE tj (s text, d text, k text, m text, b text, c bigint)');
const body = JSON.stringify({ version: 1, type: 'track', userId: 'user-1', event: 'Bench Event', properties: { index: 1, plan: 'pro', amount: 19.99, tags: ['a', 'b'] }, context: { library: { name: 'bench', version: '0' } }, timestamp: new Date().toISOString(), messageId: 'max-12345', receivedAt: new Date().toISOString() });
const rows = Array.from({ length: 20 }, (_, i) => ({ s: 'bench', d: 'Webhooks', k: 'message', m: `m-${i}`, b: body, c: Date.now() }));
const N = 3000;
const variants = {
  arrays: () => c.query({ name: 'a', text: 'INSERT INTO tj SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])', values: [rows.map((r) => r.s), rows.map((r) => r.d), rows.map((r) => r.k), rows.map((r) => r.m), rows.map((r) => r.b), rows.map((r) => r.c)] }),
  recordset: () => c.query({ name: 'j', text: 'INSERT INTO tj SELECT s, d, k, m, b, c FROM json_to_recordset($1::json) AS x(s text, d text, k text, m text, b text, c bigint)', values: [JSON.stringify(rows)] }),
  arraysOfArrays: () => c.query({ name: 'aa', text: 'INSERT INTO tj SELECT e->>0, e->>1, e->>2, e->>3, e->>4, (e->>5)::bigint FROM jsonb_array_elements($1::jsonb) e', values: [JSON.stringify(rows.map((r) => [r.s, r.d, r.k, r.m, r.b, r.c]))] }),
};
for (const [name, run] of Object.entries(variants)) {
  for (let i = 0; i < 200; i++) await run();
  await c.query('TRUNCATE tj');
  const u0 = process.cpuUsage(); const s0 = cpu();
  for (let i = 0; i < N; i++) await run();
  const u = process.cpuUsage(u0); const s = cpu() - s0;
  console.log(name.padEnd(16), 'client µs/stmt', ((u.user + u.system) / N).toFixed(0), 'server µs/stmt', (s / N).toFixed(0));
  await c.query('TRUNCATE tj');
}
// Reading: 20 rows of 11 columns vs one json_agg
await c.query(`INSERT INTO tj SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])`, [rows.map((r) => r.s), rows.map((r) => r.d), rows.map((r) => r.k), rows.map((r) => r.m), rows.map((r) => r.b), rows.map((r) => r.c)]);
const reads = {
  rows: () => c.query({ name: 'r1', text: 'SELECT s, d, k, m, b, c, c AS c2, c AS c3, 1 AS a, null::bigint AS f, c AS due FROM tj' }),
  jsonAgg: () => c.query({ name: 'r2', text: 'SELECT json_agg(json_build_array(s, d, k, m, b, c, c, c, 1, null, c)) AS j FROM tj' }),
};
for (const [name, run] of Object.entries(reads)) {
  for (let i = 0; i < 200; i++) await run();
  const u0 = process.cpuUsage(); const s0 = cpu();
  for (let i = 0; i < N; i++) { const r = await run(); if (name === 'jsonAgg') JSON.parse(JSON.stringify(r.rows[0].j)); }
  const u = process.cpuUsage(u0); const s = cpu() - s0;
  console.log(name.padEnd(16), 'client µs/stmt', ((u.user + u.system) / N).toFixed(0), 'server µs/stmt', (s / N).toFixed(0));
}
await c.query('DROP TABLE tj');
await c.end();
