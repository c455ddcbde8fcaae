import pg from 'pg';
import { PostgresStore } from '../src/forwarder/store/postgres';
const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
await admin.connect();
await admin.query('DROP DATABASE IF EXISTS explain_db'); await admin.query('CREATE DATABASE explain_db');
const url = 'postgres://postgres@127.0.0.1:5432/explain_db';
const store = await PostgresStore.open({ url }); await store.close();
const c = new pg.Client({ connectionString: url }); await c.connect();
await c.query(`INSERT INTO log_messages (source, kind, message_id, received_at, state, updated_at, body) SELECT 'bench', 'message', 'm-' || i, i, 'pending', i, repeat('x', 300) FROM generate_series(1, 50) i`);
await c.query('SET plan_cache_mode = force_generic_plan');
await c.query(`PREPARE a(jsonb) AS UPDATE log_messages l SET state = e->>2, attempts = l.attempts + (e->>1)::int FROM jsonb_array_elements($1) AS e WHERE l.id = (e->>0)::bigint`);
await c.query(`PREPARE b(bigint[], text[]) AS UPDATE log_messages l SET state = x.s FROM unnest($1, $2) AS x(id, s) WHERE l.id = x.id`);
await c.query(`PREPARE d(jsonb) AS SELECT DISTINCT ON (l.source, l.message_id) l.id FROM log_messages l JOIN jsonb_array_elements($1) AS k ON l.source = k->>0 AND l.message_id = k->>1 ORDER BY l.source, l.message_id, l.id DESC`);
for (const q of ['EXPLAIN EXECUTE a(NULL)', 'EXPLAIN EXECUTE b(NULL, NULL)', 'EXPLAIN EXECUTE d(NULL)']) {
  console.log((await c.query(q)).rows.map((x: any) => x['QUERY PLAN']).join('\n'), '\n---');
}
await c.end(); await admin.query('DROP DATABASE explain_db WITH (FORCE)'); await admin.end();
