import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { waitFor } from '../helpers/wait';
import { apiDocument } from '../../packages/forwarder/src/http/routes';
import { DEBUGGER_FILES } from '../../packages/forwarder/src/debugger/page';

// The two published packages, packed as `npm publish` would pack them and installed from the
// tarballs into empty projects, as a user's `npm install` does: what they get on disk, and that
// every entry point, the CLI, the types and the error classes work from there.

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const exec = promisify(execFile);

/** The footprint budget of `eventrelay` alone (issue 18): packages in node_modules, itself included, and bytes. */
const MAX_PACKAGES = 6;
const MAX_BYTES = 1_500_000;
/** None of these may come with `eventrelay`: the forwarder's dependencies and the optional peers (OpenTelemetry's API among them). */
const FORBIDDEN = ['undici', 'prom-client', 'pg', 'better-sqlite3', 'got', '@opentelemetry/api'];
/** The forwarder's tarball, unpacked (issue 41: it was 4.5 MB, 2.6 MB of it source maps carrying the sources). */
const MAX_FORWARDER_UNPACKED = 2_500_000;
const ENTRY_POINTS = ['eventrelay', 'eventrelay/webhooks', 'eventrelay/segment', 'eventrelay/analytics-node'];

/** The environment of a user's shell: none of the repo's loader flags or of the npm script that runs the tests. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DEBUG: '', ...extra };
  for (const name of Object.keys(env)) {
    if (name === 'NODE_OPTIONS' || name.startsWith('npm_package_') || name.startsWith('npm_lifecycle_') || name === 'npm_config_local_prefix') delete env[name];
  }
  return env;
}

async function run(command: string, args: string[], cwd: string, env = userEnv()): Promise<string> {
  try {
    const { stdout } = await exec(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stderr ?? ''}${stdout ?? ''}`, { cause: error });
  }
}

/** Writes `source` into the project as `file`, runs it with node and parses the JSON it prints. */
async function script(project: string, file: string, source: string): Promise<Record<string, unknown>> {
  writeFileSync(join(project, file), source);
  const out = await run(process.execPath, [file], project);
  return JSON.parse(out) as Record<string, unknown>;
}

/** An empty project with the given tarballs installed, as `npm install ./x.tgz` makes it. */
async function installProject(name: string, tarballs: string[]): Promise<string> {
  const project = mkdtempSync(join(tmpdir(), `eventrelay-${name}-`));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: `consumer-${name}`, version: '1.0.0', private: true }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...tarballs], project);
  return project;
}

interface Footprint {
  /** Every installed package, nested ones as `a/node_modules/b`. */
  readonly packages: string[];
  /** The sum of the sizes of every file under node_modules. */
  readonly bytes: number;
}

function footprint(project: string): Footprint {
  const packages: string[] = [];
  let bytes = 0;
  const sizeOf = (path: string): void => {
    const stat = lstatSync(path);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) sizeOf(join(path, entry));
    else if (stat.isFile()) bytes += stat.size;
  };
  const listPackages = (modules: string, prefix: string): void => {
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((scoped) => `${entry}/${scoped}`) : [entry];
      for (const name of names) {
        packages.push(prefix + name);
        const nested = join(modules, name, 'node_modules');
        if (existsSync(nested)) listPackages(nested, `${prefix}${name}/node_modules/`);
      }
    }
  };
  const modules = join(project, 'node_modules');
  listPackages(modules, '');
  sizeOf(modules);
  return { packages: packages.sort(), bytes };
}

/** The package name of each installed path: `a/node_modules/@s/b` is `@s/b`. */
const packageNames = (packages: readonly string[]): string[] => packages.map((path) => path.split('/node_modules/').pop()!);

/** Pids of the processes whose command line holds `text` (Linux /proc), this one left out. */
function processesWith(text: string): number[] {
  if (!existsSync('/proc/self/cmdline')) return [];
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text);
      } catch {
        return false; // ended meanwhile
      }
    })
    .map(Number);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

describe('the packed packages, installed from their tarballs', function () {
  this.timeout(240_000);
  const scratch = mkdtempSync(join(tmpdir(), 'eventrelay-pack-'));
  let tarballs: { name: string; path: string; files: string[]; unpackedSize: number }[] = [];
  const tarball = (name: string) => tarballs.find((t) => t.name === name)!;

  before(async () => {
    const built = ['packages/eventrelay/dist/index.js', 'packages/forwarder/dist/index.js', 'packages/forwarder/dist/cli.js'];
    if (!built.every((file) => existsSync(join(root, file)))) await run('npm', ['run', 'build'], root);
    // --ignore-scripts: the prepack script would rebuild dist/ (what `npm run build` already did).
    const out = await run('npm', ['pack', '-w', 'eventrelay', '-w', '@eventrelay/forwarder', '--ignore-scripts', '--json', '--pack-destination', scratch], root);
    const packed = JSON.parse(out) as { name: string; filename: string; files: { path: string }[]; unpackedSize: number }[];
    tarballs = packed.map((p) => ({ name: p.name, path: join(scratch, p.filename), files: p.files.map((f) => f.path), unpackedSize: p.unpackedSize }));
    expect(tarballs.map((t) => t.name)).to.deep.equal(['eventrelay', '@eventrelay/forwarder']);
  });

  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('ships the build, the types and the docs, never the sources or the tests', () => {
    for (const { name, files } of tarballs) {
      const strays = files.filter((file) => !/^(dist\/|types\/|examples\/|package\.json$|README\.md$|CHANGELOG\.md$|LICENSE$)/.test(file));
      expect(strays, name).to.deep.equal([]);
    }
    expect(tarball('eventrelay').files).to.include.members(['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts', 'types/analytics-node.d.cts']);
    expect(tarball('@eventrelay/forwarder').files).to.include.members(['dist/cli.js', 'dist/index.d.ts', 'dist/index.d.cts', 'examples/eventrelay.config.json']);
    // The bin is ESM; a CommonJS build of the CLI would be dead weight.
    expect(tarball('@eventrelay/forwarder').files.filter((file) => file.startsWith('dist/cli.cjs'))).to.deep.equal([]);
  });

  it(`weighs at most ${MAX_FORWARDER_UNPACKED} bytes unpacked (the forwarder), and neither package ships source maps`, () => {
    const forwarder = tarball('@eventrelay/forwarder');
    expect(forwarder.unpackedSize, `${forwarder.unpackedSize} bytes unpacked`).to.be.at.most(MAX_FORWARDER_UNPACKED);
    for (const { name, files } of tarballs) expect(files.filter((file) => file.endsWith('.map')), name).to.deep.equal([]);
  });

  it('packs every entry of each `files` list (npm pack --dry-run --json): none names a file the package does not have', async () => {
    const out = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts', '-w', 'eventrelay', '-w', '@eventrelay/forwarder'], root);
    const packed = JSON.parse(out) as { name: string; files: { path: string }[] }[];
    for (const [name, dir] of [['eventrelay', 'packages/eventrelay'], ['@eventrelay/forwarder', 'packages/forwarder']] as const) {
      const { files } = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { files: string[] };
      const paths = packed.find((p) => p.name === name)!.files.map((f) => f.path);
      const missing = files.filter((entry) => !paths.some((path) => path === entry || path.startsWith(`${entry}/`)));
      expect(missing, name).to.deep.equal([]);
    }
  });

  describe('eventrelay alone', () => {
    let project: string;

    before(async () => {
      project = await installProject('sdk', [tarball('eventrelay').path]);
    });

    after(() => {
      if (project) rmSync(project, { recursive: true, force: true });
    });

    it(`installs at most ${MAX_PACKAGES} packages and ${MAX_BYTES} bytes, none of the forwarder's dependencies`, () => {
      const { packages, bytes } = footprint(project);
      expect(packages).to.include('eventrelay');
      expect(packages.length, packages.join(', ')).to.be.at.most(MAX_PACKAGES);
      expect(packageNames(packages)).to.not.include.any.members(FORBIDDEN);
      expect(bytes, `${bytes} bytes in node_modules`).to.be.at.most(MAX_BYTES);
    });

    it('loads every entry point with import', async () => {
      const result = await script(project, 'load.mjs', `
        import { Analytics, ConfigError } from 'eventrelay';
        import { verifySignature, createWebhookReceiver } from 'eventrelay/webhooks';
        import { Analytics as Segment, Context } from 'eventrelay/segment';
        import Classic, { Analytics as ClassicNamed } from 'eventrelay/analytics-node';
        const delivered = (client, call) => new Promise((resolve) => call(client, (error, extra) => resolve({ error: error === undefined || error === null, extra })));
        const a = await delivered(new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:9', disable: true }), (c, cb) => c.track({ userId: 'u', event: 'E' }, cb));
        const s = await delivered(new Segment({ writeKey: 'k', host: 'http://127.0.0.1:9', disable: true }), (c, cb) => c.track({ userId: 'u', event: 'E' }, cb));
        const c = await delivered(new Classic('k', { host: 'http://127.0.0.1:9', enable: false }), (c, cb) => c.track({ userId: 'u', event: 'E' }, cb));
        console.log(JSON.stringify({
          types: [Analytics, ConfigError, verifySignature, createWebhookReceiver, Segment, Context, Classic].map((f) => typeof f),
          client: a.error && typeof a.extra, segment: s.error && s.extra instanceof Context, classic: c.error, classicNamed: Classic === ClassicNamed,
        }));`);
      expect(result).to.deep.equal({
        types: Array(7).fill('function'),
        client: 'string',
        segment: true,
        classic: true,
        classicNamed: true,
      });
    });

    it('without @opentelemetry/api, sends as before: no trace context on a message, and the receiver runs the handler of a request with traceparent', async () => {
      expect(existsSync(join(project, 'node_modules', '@opentelemetry'))).to.equal(false);
      const check = (load: string) => `${load}
        const sent = [];
        const transport = { send: async (request) => { sent.push(JSON.parse(String(request.body))); return { status: 200 }; } };
        const analytics = new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:9', flushAt: 2, transport });
        const errors = [];
        analytics.track({ userId: 'u', event: 'E' }, (error) => errors.push(error ?? null));
        analytics.track({ userId: 'u', event: 'Own', context: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } }, (error) => errors.push(error ?? null));
        analytics.closeAndFlush().then(async () => {
          const body = JSON.stringify({ version: 1, type: 'track', userId: 'u', timestamp: '2026-01-01T00:00:00.000Z', event: 'E', properties: {} });
          let handled = 0;
          const handle = createFetchHandler({ secret: 's', handler: async () => void handled++ });
          const headers = { 'x-signature': sign(body, 's'), traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
          const answer = await handle(new Request('http://127.0.0.1/hook', { method: 'POST', body, headers }));
          console.log(JSON.stringify({ errors, contexts: sent.flatMap((b) => b.batch.map((m) => Object.keys(m.context).sort())), status: answer.status, handled }));
        });`;
      const expected = { errors: [null, null], contexts: [['library'], ['library', 'traceparent']], status: 204, handled: 1 };
      expect(await script(project, 'untraced.mjs', check(`import { Analytics } from 'eventrelay';\nimport { createFetchHandler, sign } from 'eventrelay/webhooks';`))).to.deep.equal(expected);
      expect(await script(project, 'untraced.cjs', check(`const { Analytics } = require('eventrelay');\nconst { createFetchHandler, sign } = require('eventrelay/webhooks');`))).to.deep.equal(expected);
    });

    it('loads every entry point with require; require("eventrelay/analytics-node") is the class, as with analytics-node', async () => {
      const result = await script(project, 'load.cjs', `
        const { Analytics, ConfigError } = require('eventrelay');
        const { verifySignature } = require('eventrelay/webhooks');
        const { Analytics: Segment, Context } = require('eventrelay/segment');
        const Classic = require('eventrelay/analytics-node');
        const c = new Classic('k', { host: 'http://127.0.0.1:9', enable: false });
        c.track({ userId: 'u', event: 'E' }, (error) => {
          console.log(JSON.stringify({
            types: [Analytics, ConfigError, verifySignature, Segment, Context, Classic].map((f) => typeof f),
            classic: [Classic.name, Classic === Classic.Analytics, Classic === Classic.default, typeof Classic.ValidationError, c instanceof Classic, error === undefined],
          }));
        });`);
      expect(result).to.deep.equal({
        types: Array(6).fill('function'),
        classic: ['Analytics', true, true, 'function', true, true],
      });
    });

    it('gives a TypeScript consumer the types, for ESM and CommonJS (and the classic `import X = require()`)', async () => {
      const body = `
        const analytics = new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:9' });
        analytics.track({ userId: 'u', event: 'E' });
        // @ts-expect-error: userId or anonymousId is required
        analytics.track({ event: 'E' });
        export const ok: boolean = verifySignature('{}', 'ab', 'secret');
        export const segment = new Segment({ writeKey: 'k' });
        // @ts-expect-error: Segment's client takes an options object
        new Segment('k');
        export const classic = new Classic('k', { flushAt: 1 });
        export function field(error: unknown): string | undefined {
          return error instanceof ConfigError ? error.field : undefined;
        }`;
      const imports = `
        import { Analytics, ConfigError } from 'eventrelay';
        import { verifySignature } from 'eventrelay/webhooks';
        import { Analytics as Segment } from 'eventrelay/segment';
        import Classic from 'eventrelay/analytics-node';`;
      writeFileSync(join(project, 'esm.mts'), `${imports}\n${body}`);
      writeFileSync(join(project, 'cjs.cts'), `${imports}\n${body}`);
      writeFileSync(join(project, 'classic.cts'), `
        import Analytics = require('eventrelay/analytics-node');
        const analytics: Analytics = new Analytics('k', { host: 'http://127.0.0.1:9', enable: false });
        const options: Analytics.AnalyticsNodeOptions = { flushAt: 1 };
        analytics.track({ userId: 'u', event: 'E' }, (error?: Error, data?: Analytics.FlushData) => {
          if (error instanceof Analytics.ValidationError) console.log(error.field);
          console.log(data?.batch.length);
        });
        // @ts-expect-error: the classic client takes the write key first
        new Analytics({ writeKey: 'k' });
        export const same: boolean = Analytics === Analytics.Analytics && Analytics === Analytics.default;
        export { options };`);
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { strict: true, module: 'node16', moduleResolution: 'node16', noEmit: true, skipLibCheck: false, types: [] },
          files: ['esm.mts', 'cjs.cts', 'classic.cts'],
        }),
      );
      // skipLibCheck false also checks the published .d.ts files; @types/node comes from the repo.
      await run(process.execPath, [tsc, '-p', project, '--typeRoots', join(root, 'node_modules', '@types'), '--types', 'node'], project);
    });

    it('gives a Workers or Vercel Edge TypeScript project (lib WebWorker, no @types/node) the types of eventrelay, eventrelay/segment and eventrelay/analytics-node', async () => {
      const dir = join(project, 'edge');
      mkdirSync(dir, { recursive: true });
      const body = `
        export default {
          async fetch(request: Request, env: { WRITE_KEY: string }, ctx: { waitUntil(promise: Promise<unknown>): void }): Promise<Response> {
            const analytics = new Analytics({ writeKey: env.WRITE_KEY, endpoint: 'https://events.example.com', transport: new FetchTransport(), waitUntil: (p) => ctx.waitUntil(p) });
            analytics.track({ userId: 'u', event: 'E' }, (error, messageId) => console.log(error?.code, messageId));
            // @ts-expect-error: userId or anonymousId is required
            analytics.track({ event: 'E' });
            const segment = new Segment({ writeKey: env.WRITE_KEY, host: 'https://events.example.com', httpClient: new FetchHTTPClient(fetch) });
            segment.on('error', ({ code, reason, ctx: failed }) => console.log(code, reason, failed?.event.messageId));
            segment.on('http_response', (answer) => console.log(answer.status, answer.statusText));
            segment.track({ userId: 'u', event: 'E' }, (error, context) => console.log(error, context?.event.messageId));
            // @ts-expect-error: Segment's track needs an event
            segment.track({ userId: 'u' });
            const classic = new Classic(env.WRITE_KEY, { host: 'https://events.example.com', errorHandler: (error) => console.log(error.message) });
            classic.track({ userId: 'u', event: 'E' }).identify({ userId: 'u' });
            ctx.waitUntil(Promise.all([analytics.flush(), segment.closeAndFlush(), classic.flush()]));
            return new Response(request.url);
          },
        };
        export function field(error: unknown): string | undefined {
          return error instanceof ConfigError || error instanceof SegmentConfigError ? error.field : undefined;
        }`;
      writeFileSync(join(dir, 'worker.ts'), `
        import { Analytics, ConfigError, FetchTransport } from 'eventrelay';
        import { Analytics as Segment, ConfigError as SegmentConfigError, FetchHTTPClient } from 'eventrelay/segment';
        import Classic from 'eventrelay/analytics-node';
        ${body}`);
      // As wrangler's and Next.js's templates set it up, with every library's declarations checked and no Node types at all.
      const compilerOptions = { strict: true, target: 'ES2022', lib: ['ES2022', 'WebWorker'], types: [], noEmit: true, skipLibCheck: false };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...compilerOptions, module: 'ES2022', moduleResolution: 'bundler' }, files: ['worker.ts'] }));
      await run(process.execPath, [tsc, '-p', dir], dir);

      // eventrelay/webhooks declares its Node, Express and Fastify adapters with Node's http types: checked
      // without them, those are its only complaints, and with skipLibCheck the Fetch handler is typed.
      writeFileSync(join(dir, 'hooks.ts'), `
        import { createFetchHandler, verifySignatureAsync } from 'eventrelay/webhooks';
        export const handle: (request: Request) => Promise<Response> = createFetchHandler({ secret: 's', handler: async (message) => console.log(message.type) });
        export const verified: Promise<boolean> = verifySignatureAsync('{}', 'ab', 's');
        // @ts-expect-error: the handler gets the message first, typed
        createFetchHandler({ secret: 's', handler: async (message: number) => console.log(message) });`);
      const hooksConfig = (skipLibCheck: boolean) =>
        JSON.stringify({ compilerOptions: { ...compilerOptions, skipLibCheck, module: 'ES2022', moduleResolution: 'bundler' }, files: ['hooks.ts'] });
      writeFileSync(join(dir, 'tsconfig.hooks.json'), hooksConfig(true));
      await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.hooks.json')], dir);
      writeFileSync(join(dir, 'tsconfig.hooks.json'), hooksConfig(false));
      const failed = await exec(process.execPath, [tsc, '-p', join(dir, 'tsconfig.hooks.json')], { cwd: dir, env: userEnv(), encoding: 'utf8' }).then(
        () => '',
        (error: { stdout?: string }) => error.stdout ?? '',
      );
      const complaints = failed.trim().split('\n').filter((line) => /error TS/.test(line));
      expect(complaints, failed).to.have.length.greaterThan(0);
      for (const line of complaints) expect(line).to.match(/eventrelay\/dist\/webhooks\/index\.d\.ts\(\d+,\d+\): error TS\d+: Cannot find (module 'node:http'|namespace 'NodeJS')/);
    });
  });

  describe('eventrelay and @eventrelay/forwarder together', () => {
    let project: string;
    const forwarderDir = () => join(project, 'node_modules', '@eventrelay', 'forwarder');
    const exampleEnv = { EVENTRELAY_ADMIN_TOKEN: 'a', WEB_WRITE_KEY: 'w', WEB_WEBHOOK_SECRET: 's', BACKUP_HOOK_AUTH: 'b', IOS_WRITE_KEY: 'i' };

    before(async () => {
      // better-sqlite3 and pg are optional peers, not installed: the tests use the memory store.
      project = await installProject('both', [tarball('eventrelay').path, tarball('@eventrelay/forwarder').path]);
    });

    after(() => {
      if (project) rmSync(project, { recursive: true, force: true });
    });

    it('installs one copy of eventrelay, which the forwarder shares, and neither optional peer', () => {
      const { packages } = footprint(project);
      expect(packages).to.include.members(['eventrelay', '@eventrelay/forwarder', 'undici', 'prom-client']);
      expect(packageNames(packages).filter((name) => name === 'eventrelay')).to.have.length(1);
      expect(packageNames(packages)).to.not.include.any.members(['pg', 'better-sqlite3', 'got']);
    });

    it('`npx eventrelay --version` runs the installed CLI and prints the forwarder\'s version', async () => {
      const { version } = JSON.parse(readFileSync(join(forwarderDir(), 'package.json'), 'utf8')) as { version: string };
      expect(realpathSync(join(project, 'node_modules', '.bin', 'eventrelay'))).to.equal(join(realpathSync(forwarderDir()), 'dist', 'cli.js'));
      // npm_config_yes=false: npx never installs a package of that name; the local bin must answer.
      const out = await run('npx', ['eventrelay', '--version'], project, userEnv({ npm_config_yes: 'false' }));
      expect(out.trim()).to.equal(version);
    });

    it('`npx eventrelay serve` under a supervisor that sends SIGTERM to npx leaves no server behind', async function () {
      if (!existsSync('/proc/self/stat')) this.skip();
      const config = join(project, `serve-under-npx-${process.pid}.json`);
      writeFileSync(config, JSON.stringify({ storage: { type: 'memory' } }));
      const npx = spawn('npx', ['eventrelay', 'serve', '--config', config, '--port', '0'], {
        cwd: project,
        env: userEnv({ npm_config_yes: 'false' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      npx.stdout.on('data', (c: Buffer) => (out += c.toString()));
      npx.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const exited = new Promise<void>((done) => npx.once('exit', () => done()));
      let servers: number[] = [];
      try {
        await waitFor(() => /listening on (http:\/\/\S+)/.test(out), `the server to listen:\n${out}`, 30_000);
        const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;
        // The server is the node process running the CLI with this config; npx is its ancestor.
        servers = processesWith(config).filter((pid) => pid !== npx.pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('serve'));
        expect(servers.length, out).to.be.above(0);
        expect((await fetch(`${url}/health`)).status).to.equal(200);
        npx.kill('SIGTERM');
        await exited;
        // The server notices that npx ended and stops as on SIGTERM: its process ends and its port is free.
        await waitFor(() => servers.every((pid) => !alive(pid)), 'the server process to end', 20_000);
        const refused = await fetch(`${url}/health`).then(
          () => 'answered',
          (error: { cause?: { code?: string } }) => error.cause?.code,
        );
        expect(refused).to.equal('ECONNREFUSED');
        expect(out).to.contain('"event":"stopped"');
      } finally {
        // Whatever happened, nothing this test started outlives it.
        if (npx.exitCode === null && npx.signalCode === null) npx.kill('SIGKILL');
        for (const pid of servers) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
    });

    it('the shipped example config passes `eventrelay check`', async () => {
      const example = join(forwarderDir(), 'examples', 'eventrelay.config.json');
      const out = await run('npx', ['eventrelay', 'check', '--config', example], project, userEnv({ ...exampleEnv, npm_config_yes: 'false' }));
      expect(out).to.match(/: OK \(2 sources: web, ios\)$/m);
    });

    it('loads @eventrelay/forwarder with import and with require', async () => {
      const names = ['createForwarder', 'Forwarder', 'parseConfig', 'WebhookDestination', 'MemoryStore', 'ConfigError'];
      const esm = await script(project, 'forwarder.mjs', `
        import * as forwarder from '@eventrelay/forwarder';
        console.log(JSON.stringify(${JSON.stringify(names)}.map((name) => typeof forwarder[name])));`);
      const cjs = await script(project, 'forwarder.cjs', `
        const forwarder = require('@eventrelay/forwarder');
        console.log(JSON.stringify(${JSON.stringify(names)}.map((name) => typeof forwarder[name])));`);
      expect(esm).to.deep.equal(Array(names.length).fill('function'));
      expect(cjs).to.deep.equal(Array(names.length).fill('function'));
    });

    it('serves the debugger page from the installed package, with import and require', async () => {
      // Every file of the page: its modules too (app.js imports the others).
      const files = [...DEBUGGER_FILES];
      const expected = Object.fromEntries(
        files.map((file) => [file, createHash('sha256').update(readFileSync(join(root, 'packages', 'forwarder', 'src', 'debugger', file))).digest('hex')]),
      );
      const serve = (load: string) => `${load}
        const { createHash } = require('node:crypto');
        const f = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 's', writeKey: 'k' }] });
        f.listen({ port: 0, host: '127.0.0.1' }).then(async ({ url }) => {
          const seen = {};
          for (const file of ${JSON.stringify(files)}) {
            const path = file === 'index.html' ? '/debugger' : '/debugger/' + file;
            const response = await fetch(url + path);
            const body = Buffer.from(await response.arrayBuffer());
            seen[file] = response.status === 200 ? createHash('sha256').update(body).digest('hex') : response.status;
          }
          await f.close();
          console.log(JSON.stringify(seen));
        });`;
      const esm = await script(project, 'debugger.mjs', serve(`import { createForwarder } from '@eventrelay/forwarder';\nimport { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);`));
      const cjs = await script(project, 'debugger.cjs', serve(`const { createForwarder } = require('@eventrelay/forwarder');`));
      expect(esm).to.deep.equal(expected);
      expect(cjs).to.deep.equal(expected);
    });

    it('ships the OpenAPI document as @eventrelay/forwarder/openapi.json, and serves it at GET /openapi.json, with import and require', async () => {
      // The document the sources generate from the route declarations (src/http/routes/).
      const expected = apiDocument();
      const serve = (load: string) => `${load}
        const f = createForwarder({ storage: { type: 'memory' }, sources: [] });
        f.listen({ port: 0, host: '127.0.0.1' }).then(async ({ url }) => {
          const served = await (await fetch(url + '/openapi.json')).json();
          await f.close();
          console.log(JSON.stringify({ shipped: doc, same: JSON.stringify(served) === JSON.stringify(doc) }));
        });`;
      const esm = await script(project, 'openapi.mjs', serve(`import { createForwarder } from '@eventrelay/forwarder';\nimport doc from '@eventrelay/forwarder/openapi.json' with { type: 'json' };`));
      const cjs = await script(project, 'openapi.cjs', serve(`const { createForwarder } = require('@eventrelay/forwarder');\nconst doc = require('@eventrelay/forwarder/openapi.json');`));
      expect(esm).to.deep.equal({ shipped: expected, same: true });
      expect(cjs).to.deep.equal({ shipped: expected, same: true });
    });

    it('the forwarder\'s build holds no copy of the SDK: it loads eventrelay/internal', () => {
      const dist = join(forwarderDir(), 'dist');
      const code = filesUnder(dist).filter((file) => /\.(c?js|d\.c?ts)$/.test(file));
      expect(code.length).to.be.greaterThan(3);
      for (const file of code) {
        const text = readFileSync(file, 'utf8');
        expect(text, file).to.not.match(/class (EventRelayError|ConfigError|ValidationError)\b/);
        expect(text, file).to.not.match(/function (verifySignature|checkMessage|toWebhookMessage)\b/);
      }
      const entries = ['index.js', 'index.cjs'].map((file) => readFileSync(join(dist, file), 'utf8'));
      const chunks = code.filter((file) => /chunk-[^/]*\.c?js$/.test(file)).map((file) => readFileSync(file, 'utf8'));
      expect([...entries, ...chunks].join('\n')).to.include('eventrelay/internal');
      expect(existsSync(join(forwarderDir(), 'node_modules', 'eventrelay'))).to.equal(false);
    });

    it('an error the forwarder throws passes instanceof against the classes of eventrelay, ESM and CommonJS mixed both ways', async () => {
      const result = await script(project, 'mixed.mjs', `
        import { createRequire } from 'node:module';
        import * as sdkEsm from 'eventrelay';
        import * as forwarderEsm from '@eventrelay/forwarder';
        const require = createRequire(import.meta.url);
        const sdkCjs = require('eventrelay');
        const forwarderCjs = require('@eventrelay/forwarder');
        const thrown = (f) => { try { f(); } catch (error) { return error; } return undefined; };
        const result = {};
        for (const [fName, forwarder] of [['esm', forwarderEsm], ['cjs', forwarderCjs]]) {
          const errors = {
            parseConfig: thrown(() => forwarder.parseConfig({ sources: [{ name: 's', writeKey: '' }] })),
            createForwarder: thrown(() => forwarder.createForwarder({ storage: { type: 'memory' }, sources: 'none' })),
          };
          for (const [how, error] of Object.entries(errors)) {
            for (const [sName, sdk] of [['esm', sdkEsm], ['cjs', sdkCjs]]) {
              result[\`forwarder \${fName} \${how}, eventrelay \${sName}\`] = [
                error instanceof sdk.ConfigError, error instanceof sdk.EventRelayError, error instanceof Error,
                error instanceof sdk.ValidationError, error?.code, typeof error?.field,
              ];
            }
          }
        }
        result.sameClass = [forwarderEsm.ConfigError === sdkEsm.ConfigError, forwarderCjs.ConfigError === sdkCjs.ConfigError];
        console.log(JSON.stringify(result));`);
      const expected: Record<string, unknown> = { sameClass: [true, true] };
      for (const f of ['esm', 'cjs']) {
        for (const how of ['parseConfig', 'createForwarder']) {
          for (const s of ['esm', 'cjs']) expected[`forwarder ${f} ${how}, eventrelay ${s}`] = [true, true, true, false, 'ERR_CONFIG', 'string'];
        }
      }
      expect(result).to.deep.equal(expected);
    });

    it('the SDK\'s entry points never load undici, even where it is installed; the forwarder\'s does', async () => {
      // Every module resolved by import is logged by a resolve hook; require's by require.cache.
      writeFileSync(join(project, 'log-hook.mjs'), `
        import { appendFileSync } from 'node:fs';
        export async function resolve(specifier, context, next) {
          const result = await next(specifier, context);
          appendFileSync(${JSON.stringify(join(project, 'resolved.log'))}, result.url + '\\n');
          return result;
        }`);
      const loaded = `() => {
        const log = ${JSON.stringify(join(project, 'resolved.log'))};
        const resolved = existsSync(log) ? readFileSync(log, 'utf8').split('\\n') : [];
        return [...resolved, ...Object.keys(require.cache)].some((path) => path.includes('/node_modules/undici/'));
      }`;
      const result = await script(project, 'undici.mjs', `
        import { register, createRequire } from 'node:module';
        import { existsSync, readFileSync } from 'node:fs';
        register('./log-hook.mjs', import.meta.url);
        const require = createRequire(import.meta.url);
        const undiciLoaded = ${loaded};
        for (const entry of ${JSON.stringify(ENTRY_POINTS)}) { await import(entry); require(entry); }
        const sdk = undiciLoaded();
        await import('@eventrelay/forwarder');
        console.log(JSON.stringify({ sdk, forwarder: undiciLoaded() }));`);
      expect(result).to.deep.equal({ sdk: false, forwarder: true });
    });
  });
});

describe('a clean `npm ci` of the repository', function () {
  this.timeout(240_000);

  it('warns of no package that needs a newer Node than the 20.19 the packages support (no EBADENGINE)', async () => {
    // The lock file and the package files of a fresh clone, installed as CI does (a dry run: the
    // engine check is npm's, made before anything is fetched).
    const clone = mkdtempSync(join(tmpdir(), 'eventrelay-ci-'));
    try {
      for (const file of ['package.json', 'package-lock.json', 'packages/eventrelay/package.json', 'packages/forwarder/package.json']) {
        mkdirSync(join(clone, file, '..'), { recursive: true });
        writeFileSync(join(clone, file), readFileSync(join(root, file)));
      }
      const { stderr } = await exec('npm', ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: clone, env: userEnv(), encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
      expect(stderr).not.to.contain('EBADENGINE');
      expect(stderr).not.to.match(/npm warn/i);
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  });
});
