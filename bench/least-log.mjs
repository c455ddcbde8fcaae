// The least delivery log a forwarder can keep with the promises of eventrelay's (see
// forwarder-floor.mjs, which writes it in its `log` modes, and forwarder-log.mjs, which measures it
// alone beside eventrelay's): a line per call and a row per attempt, in tables of their own,
// committed with the others of the next 50 ms without an fsync (SQLite) or a WAL flush
// (PostgreSQL) of their own. A line (messageId, userId, time, state, body) is indexed by
// messageId, userId and time, as the admin API finds lines; an attempt row (line, time, status,
// duration) by its line; an attempt also sets its line's state and erases the delivered body.
//
// Each returns `write(lines, attempts)`: `lines` [{ messageId, userId, at, body }] are inserted
// pending and their ids returned in order; `attempts` [{ lineId, at, status, duration }] are
// written and their lines marked delivered, all in one transaction.

/** The least delivery log on SQLite: `write(lines, attempts)` commits both in one transaction without an fsync. */
export function sqliteLog(db) {
  db.exec(`CREATE TABLE IF NOT EXISTS log_lines (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL, user_id TEXT, received_at INTEGER NOT NULL,
      state TEXT NOT NULL, finished_at INTEGER, body TEXT);
    CREATE INDEX IF NOT EXISTS log_lines_message ON log_lines (message_id);
    CREATE INDEX IF NOT EXISTS log_lines_user ON log_lines (user_id);
    CREATE INDEX IF NOT EXISTS log_lines_time ON log_lines (received_at);
    CREATE TABLE IF NOT EXISTS log_tries (id INTEGER PRIMARY KEY, line_id INTEGER NOT NULL, at INTEGER NOT NULL, status INTEGER NOT NULL, duration INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS log_tries_line ON log_tries (line_id);`);
  const line = db.prepare("INSERT INTO log_lines (message_id, user_id, received_at, state, body) VALUES (?, ?, ?, 'pending', ?)");
  const attempt = db.prepare('INSERT INTO log_tries (line_id, at, status, duration) VALUES (?, ?, ?, ?)');
  const finish = db.prepare("UPDATE log_lines SET state = 'delivered', finished_at = ?, body = NULL WHERE id = ?");
  const write = db.transaction((lines, attempts) => {
    const ids = lines.map((l) => Number(line.run(l.messageId, l.userId, l.at, l.body).lastInsertRowid));
    for (const a of attempts) {
      attempt.run(a.lineId, a.at, a.status, a.duration);
      finish.run(a.at, a.lineId);
    }
    return ids;
  });
  return async (lines, attempts) => {
    db.pragma('synchronous = NORMAL');
    try {
      return write(lines, attempts);
    } finally {
      db.pragma('synchronous = FULL');
    }
  };
}

/** The least delivery log on PostgreSQL: one transaction per flush, committed without waiting for the WAL. */
export async function postgresLog(pool) {
  await pool.query(`CREATE TABLE IF NOT EXISTS log_lines (id bigserial PRIMARY KEY, message_id text NOT NULL, user_id text, received_at bigint NOT NULL,
      state text NOT NULL, finished_at bigint, body text) WITH (fillfactor = 50);
    CREATE INDEX IF NOT EXISTS log_lines_message ON log_lines (message_id);
    CREATE INDEX IF NOT EXISTS log_lines_user ON log_lines (user_id);
    CREATE INDEX IF NOT EXISTS log_lines_time ON log_lines (received_at);
    CREATE TABLE IF NOT EXISTS log_tries (id bigserial PRIMARY KEY, line_id bigint NOT NULL, at bigint NOT NULL, status int NOT NULL, duration int NOT NULL);
    CREATE INDEX IF NOT EXISTS log_tries_line ON log_tries (line_id);`);
  return async (lines, attempts) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL synchronous_commit = off');
      const { rows } = await client.query({
        name: 'floor-log-lines',
        text: `INSERT INTO log_lines (message_id, user_id, received_at, state, body)
          SELECT m, u, t, 'pending', b FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS x(m, u, t, b, n) ORDER BY n RETURNING id`,
        values: [lines.map((l) => l.messageId), lines.map((l) => l.userId), lines.map((l) => l.at), lines.map((l) => l.body)],
      });
      if (attempts.length > 0) {
        const values = [attempts.map((a) => a.lineId), attempts.map((a) => a.at), attempts.map((a) => a.status), attempts.map((a) => a.duration)];
        await client.query({
          name: 'floor-log-tries',
          text: `WITH a AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::int[]) AS a(l, t, s, d)),
            i AS (INSERT INTO log_tries (line_id, at, status, duration) SELECT l, t, s, d FROM a)
            UPDATE log_lines SET state = 'delivered', finished_at = a.t, body = NULL FROM a WHERE log_lines.id = a.l`,
          values,
        });
      }
      await client.query('COMMIT');
      return rows.map((r) => Number(r.id));
    } finally {
      client.release();
    }
  };
}
