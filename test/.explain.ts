import pg from 'pg';
import { PostgresStore } from '../src/forwarder/store/postgres';
const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
await admin.connect();
await admin.query('DROP DATABASE IF EXISTS explain_db'); await admin.query('CREATE DATABASE explain_db');
const url = 'postgres://postgres@127.0.0.1:5432/explain_db';
const store = await PostgresStore.open({ url }); await store.close();
const c = new pg.Client({ connectionString: url }); await c.connect();
await c.query(`INSERT INTO log_messages (source, kind, message_id, received_at, state, updated_at, body) SELECT 'bench', 'message', 'm-' || i, i, 'pending', i, repeat('x', 300) FROM generate_series(1, 50000) i`);
await c.query(`INSERT INTO deliveries (source, destination, kind, message_id, body, created_at, next_attempt_at) SELECT 'bench', 'Webhooks', 'message', 'm-' || i, repeat('x', 300), i, i FROM generate_series(1, 50000) i`);
await c.query('ANALYZE');
const j = JSON.stringify(Array.from({ length: 20 }, (_, i) => [i * 100 + 1, 1, 'delivered', 5, 5, null, true]));
for (const q of [
  [`UPDATE log_messages l SET state = e->>2, attempts = l.attempts + (e->>1)::int FROM jsonb_array_elements($1::jsonb) AS e WHERE l.id = (e->>0)::bigint`, [j]],
  [`SELECT DISTINCT ON (l.source, l.message_id) l.id FROM log_messages l JOIN jsonb_array_elements($1::jsonb) AS k ON l.source = k->>0 AND l.message_id = k->>1 WHERE l.state NOT IN ('duplicate') ORDER BY l.source, l.message_id, l.id DESC`, [JSON.stringify([['bench', 'm-5'], ['bench', 'm-7']])]],
  [`WITH o AS (SELECT (e->>0)::bigint AS id, (e->>2)::smallint AS status FROM jsonb_array_elements($1::jsonb) AS e) DELETE FROM deliveries d USING o WHERE d.id = o.id AND o.status = 1 AND d.status = 0`, [JSON.stringify([[5, 1, 1], [9, 1, 1]])]],
]) {
  const r = await c.query('EXPLAIN (ANALYZE, COSTS OFF) ' + q[0], q[1] as unknown[]);
  console.log(r.rows.map((x: any) => x['QUERY PLAN']).join('\n'), '\n---');
}
await c.end(); await admin.query('DROP DATABASE explain_db WITH (FORCE)'); await admin.end();
