import type { Pool, PoolClient } from 'pg';

/** The query in flight fails with the same error, and its caller handles it. */
const ignore = (): void => {};

/**
 * A connection of the pool for several statements (a transaction, a session lock), listened to
 * while it is out. pg's pool listens only to its idle connections: one that ends while checked out
 * (a server restart, a terminated backend) emits `error`, and with no listener that error would end
 * the process. The statement running then fails with it, as does any later one on this connection;
 * `release()` stops listening, and the pool drops a connection that ended.
 */
export async function checkout(pool: Pool): Promise<PoolClient> {
  const client = await pool.connect();
  client.on('error', ignore);
  const release = client.release.bind(client);
  client.release = (error?: Error | boolean) => {
    client.removeListener('error', ignore);
    release(error);
  };
  return client;
}
