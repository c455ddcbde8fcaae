import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBUG: '' } });
}

describe('the packed package', function () {
  this.timeout(240_000);
  let project: string;

  before(() => {
    if (!existsSync(join(root, 'dist', 'index.js'))) run('npm', ['run', 'build'], root);
    project = mkdtempSync(join(tmpdir(), 'eventrelay-consumer-'));
    run('npm', ['pack', '--pack-destination', project], root);
    const tarball = readdirSync(project).find((f) => f.endsWith('.tgz'));
    expect(tarball, 'npm pack made a tarball').to.be.a('string');
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tarball}`], project);
  });

  after(() => {
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('installs without the forwarder-only native dependency', () => {
    expect(existsSync(join(project, 'node_modules', 'eventrelay', 'dist', 'index.js'))).to.equal(true);
    expect(existsSync(join(project, 'node_modules', 'better-sqlite3'))).to.equal(false);
    // Optional peers: not installed with the package.
    expect(existsSync(join(project, 'node_modules', 'got'))).to.equal(false);
    expect(existsSync(join(project, 'node_modules', 'pg'))).to.equal(false);
    expect(existsSync(join(project, 'node_modules', 'eventrelay', 'src'))).to.equal(false);
  });

  it('ships the example config the README links to, and it passes `eventrelay check`', () => {
    const example = join(project, 'node_modules', 'eventrelay', 'examples', 'eventrelay.config.json');
    expect(existsSync(example)).to.equal(true);
    const env = { ...process.env, EVENTRELAY_ADMIN_TOKEN: 'a', WEB_WRITE_KEY: 'w', WEB_WEBHOOK_SECRET: 's', BACKUP_HOOK_AUTH: 'b', IOS_WRITE_KEY: 'i' };
    const out = execFileSync(process.execPath, [join(project, 'node_modules', '.bin', 'eventrelay'), 'check', '--config', example], { cwd: project, encoding: 'utf8', env });
    expect(out).to.match(/OK \(2 sources: web, ios\)/);
  });

  it('loads undici only with the forwarder (its webhook sender), never with the client or the receiver helpers', () => {
    // A resolve hook that refuses undici: each entry point but the forwarder's must load without it.
    const hook = 'export async function resolve(s, c, next) { if (s === "undici") throw new Error("undici was loaded"); return next(s, c); }';
    const out = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { register } from 'node:module';
         register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
         for (const entry of ['eventrelay', 'eventrelay/webhooks', 'eventrelay/segment', 'eventrelay/analytics-node']) await import(entry);
         const forwarder = await import('eventrelay/forwarder').then(() => 'loaded', (error) => error.message);
         console.log('clients clean, forwarder: ' + forwarder);`,
      ],
      project,
    );
    expect(out.trim()).to.equal('clients clean, forwarder: undici was loaded');
  });

  it('loads every entry point with import', () => {
    const out = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { Analytics, ValidationError } from 'eventrelay';
         import * as webhooks from 'eventrelay/webhooks';
         import * as forwarder from 'eventrelay/forwarder';
         const a = new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:9', disable: true });
         a.track({ userId: 'u', event: 'E' }, (e, id) => console.log(typeof Analytics, typeof ValidationError, typeof webhooks.verifySignature, typeof forwarder.WebhookDestination, e === undefined, typeof id));`,
      ],
      project,
    );
    expect(out.trim()).to.equal('function function function function true string');
  });

  it('ships the debugger page and serves it from the installed package, with import and require', () => {
    for (const file of ['index.html', 'app.js', 'app.css']) {
      expect(existsSync(join(project, 'node_modules', 'eventrelay', 'dist', 'debugger', file)), file).to.equal(true);
    }
    const script = (load: string) => `${load}
      const f = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 's', writeKey: 'k' }] });
      f.listen({ port: 0 }).then(async ({ url }) => {
        const sizes = [];
        for (const path of ['/debugger', '/debugger/app.js', '/debugger/app.css']) {
          const r = await fetch(url + path);
          sizes.push(r.status + ':' + (await r.text()).length);
        }
        console.log(sizes.join(' '));
        await f.close();
      });`;
    const expected = ['index.html', 'app.js', 'app.css']
      .map((file) => `200:${readFileSync(join(root, 'src', 'forwarder', 'debugger', file), 'utf8').length}`)
      .join(' ');
    const esm = run(process.execPath, ['--input-type=module', '-e', script(`import { createForwarder } from 'eventrelay/forwarder';`)], project);
    expect(esm.trim()).to.equal(expected);
    const cjs = run(process.execPath, ['-e', script(`const { createForwarder } = require('eventrelay/forwarder');`)], project);
    expect(cjs.trim()).to.equal(expected);
  });

  it('loads every entry point with require', () => {
    const out = run(
      process.execPath,
      [
        '-e',
        `const { Analytics, EventRelayError } = require('eventrelay');
         const webhooks = require('eventrelay/webhooks');
         const forwarder = require('eventrelay/forwarder');
         const a = new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:9', disable: true });
         console.log(typeof Analytics, typeof EventRelayError, typeof webhooks.verifySignature, typeof forwarder.WebhookDestination);`,
      ],
      project,
    );
    expect(out.trim()).to.equal('function function function function');
  });

  it('loads the Segment compatibility layers with import and require', () => {
    const esm = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { Analytics as Segment, Context } from 'eventrelay/segment';
         import Classic, { Analytics as ClassicNamed } from 'eventrelay/analytics-node';
         const s = new Segment({ writeKey: 'k', host: 'http://127.0.0.1:9', disable: true });
         s.track({ userId: 'u', event: 'E' }, (e, ctx) => {
           const c = new Classic('k', { host: 'http://127.0.0.1:9', enable: false });
           c.track({ userId: 'u', event: 'E' }, (e2) => console.log(e === undefined, ctx instanceof Context, Classic === ClassicNamed, e2 === undefined));
         });`,
      ],
      project,
    );
    expect(esm.trim()).to.equal('true true true true');
    const cjs = run(
      process.execPath,
      [
        '-e',
        `const { Analytics: Segment } = require('eventrelay/segment');
         const Classic = require('eventrelay/analytics-node');
         const { Analytics } = require('eventrelay/analytics-node');
         const c = new Classic('k', { host: 'http://127.0.0.1:9', enable: false });
         console.log(typeof Segment, typeof Classic, Analytics === Classic, typeof Classic.ValidationError, typeof c.track, Segment.name, Classic.name);`,
      ],
      project,
    );
    expect(cjs.trim()).to.equal('function function true function function Analytics Analytics');
  });

  it('gives a TypeScript consumer the types, for ESM and CommonJS', () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, module: 'node16', moduleResolution: 'node16', noEmit: true, skipLibCheck: false, types: [] }, files: ['esm.mts', 'cjs.cts'] }),
    );
    const body = `
      const analytics = new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:9' });
      analytics.track({ userId: 'u', event: 'E' });
      // @ts-expect-error: userId or anonymousId is required
      analytics.track({ event: 'E' });
      const ok: boolean = verifySignature('{}', 'ab', 'secret');
      export { ok };
    `;
    writeFileSync(join(project, 'esm.mts'), `import { Analytics } from 'eventrelay';\nimport { verifySignature } from 'eventrelay/webhooks';\n${body}`);
    writeFileSync(join(project, 'cjs.cts'), `import { Analytics } from 'eventrelay';\nimport { verifySignature } from 'eventrelay/webhooks';\n${body}`);
    // skipLibCheck false also checks our published .d.ts files; @types/node comes from the repo.
    run(process.execPath, [tsc, '-p', project, '--typeRoots', join(root, 'node_modules', '@types'), '--types', 'node'], project);
  });
});
