import { describe, it } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { checkout } from '../../src/store/postgres/pg-driver';
import { usePostgres } from '../../../../test/helpers/postgres';
import { waitFor } from '../../../../test/helpers/wait';

describe('a pooled PostgreSQL connection checked out for several statements', function () {
  this.timeout(20_000);
  const db = usePostgres();

  it('ends with an error its statements report, not one that ends the process, when the server drops it', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const client = await checkout(pool);
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      let ended = false;
      client.once('end', () => (ended = true));
      // A restart or a failover, as the connection sees it: its backend ends while it is out of the pool.
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      // Without a listener, the `error` event the connection emits now fails this test as uncaught.
      await waitFor(() => ended, 'the connection to end');
      const error = await client.query('SELECT 1').then(() => undefined, (e: unknown) => e);
      expect(error).to.be.instanceOf(Error);
      // Out of the pool, only the listener checkout() added; released, not that one any more.
      const ours = client.listeners('error');
      expect(ours).to.have.length(1);
      client.release();
      expect(client.listeners('error')).to.not.include(ours[0]);
      // The pool dropped it and opens another.
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).to.equal(1);
    } finally {
      await admin.end();
      await pool.end();
    }
  });
});
