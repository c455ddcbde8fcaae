import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { join, resolve } from 'node:path';
import { createForwarder } from '../../src/service';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { runCli, requireBuiltCli } from './helpers';

const WEB = { name: 'web', writeKey: 'web-key' };

describe('eventrelay check and serve refuse every kind of bad config naming its field (child processes)', function () {
  this.timeout(120_000);
  const tempDir = useTempDirs('eventrelay-config-errors-');
  let dir: string;
  let taken: Server;
  let takenPort: number;

  before(async () => {
    requireBuiltCli();
    dir = tempDir();
    taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    takenPort = (taken.address() as AddressInfo).port;
  });
  after(() => {
    taken.close();
  });

  function file(name: string, content: string | object): string {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  }

  const kinds: Array<{ kind: string; command: 'check' | 'serve'; config: () => string; args?: () => string[]; env?: Record<string, string>; field: string }> = [
    { kind: 'the config is a list', command: 'check', config: () => file('list.json', [WEB]), field: 'in the file (top level)' },
    { kind: 'the file is not JSON', command: 'check', config: () => file('broken.json', '{ "sources": [ }'), field: 'in the file (top level)' },
    { kind: 'the file is missing', command: 'check', config: () => join(dir, 'nope.json'), field: 'in the file (top level)' },
    { kind: 'a write key of spaces only', command: 'check', config: () => file('spaces.json', { sources: [{ name: 'web', writeKey: '    ' }] }), field: 'at sources[0].writeKey' },
    {
      kind: 'a write key from a variable of spaces only',
      command: 'check',
      config: () => file('spaces-env.json', { sources: [{ name: 'web', writeKey: { env: 'WEB_KEY' } }] }),
      env: { WEB_KEY: '  ' },
      field: 'at sources[0].writeKey',
    },
    { kind: 'an admin token of spaces only', command: 'check', config: () => file('token.json', { adminToken: ' ', sources: [WEB] }), field: 'at adminToken' },
    { kind: 'a host that is no host', command: 'check', config: () => file('host.json', { host: 'not a host!', sources: [WEB] }), field: 'at host' },
    { kind: 'a source name of 10,000 characters', command: 'check', config: () => file('long.json', { sources: [{ name: 'n'.repeat(10_000), writeKey: 'k' }] }), field: 'at sources[0].name' },
    {
      kind: 'a batch of 5000 calls on a URL',
      command: 'check',
      config: () => file('batch.json', { sources: [{ ...WEB, destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.com/', batch: { maxEvents: 5000 } }] } } }] }),
      field: 'at sources[0].destinations.Webhooks.webhooks[0].batch.maxEvents',
    },
    { kind: 'an unknown field', command: 'check', config: () => file('unknown.json', { sources: [{ ...WEB, destination: {} }] }), field: 'at sources[0].destination' },
    { kind: 'an unset variable', command: 'check', config: () => file('unset.json', { adminToken: { env: 'NOT_SET_ANYWHERE' }, sources: [WEB] }), field: 'at adminToken' },
    { kind: 'a host that is not this machine', command: 'serve', config: () => file('far.json', { host: '203.0.113.7', storage: { type: 'memory' } }), field: 'at host' },
    {
      kind: 'a port in use',
      command: 'serve',
      config: () => file('port.json', { storage: { type: 'memory' } }),
      args: () => ['--port', String(takenPort)],
      field: 'at port (--port)',
    },
    {
      kind: 'a data directory that is a file',
      command: 'serve',
      config: () => file('datadir.json', { storage: { type: 'sqlite', dataDir: file('not-a-dir', 'x') } }),
      field: 'at storage.dataDir',
    },
    {
      kind: 'a PostgreSQL server that does not answer',
      command: 'serve',
      config: () => file('pg.json', { storage: { type: 'postgres', url: 'postgres://eventrelay@127.0.0.1:1/none', connectTimeout: 2000 } }),
      field: 'at storage.url',
    },
  ];

  for (const k of kinds) {
    it(`${k.kind}: exit 1, the field named, no stack trace`, async () => {
      const args = k.command === 'serve' ? ['serve', '--config', k.config(), ...(k.args?.() ?? ['--port', '0'])] : ['check', '--config', k.config()];
      const result = await runCli(args, k.env);
      expect(result.code, result.stdout + result.stderr).to.equal(1);
      expect(result.stderr).to.contain(k.field);
      expect(result.stderr).not.to.match(/\n\s+at /);
    });
  }

  it('takes a batch per URL within its ranges', async () => {
    const batch = { maxEvents: 4000, maxBytes: 1024, maxWaitMs: 0 };
    const result = await runCli(['check', '--config', file('batch-ok.json', { sources: [{ ...WEB, destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.com/', batch }] } } }] })]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.contain('OK (1 sources: web)');
  });

  it('reads a file that starts with a byte order mark', async () => {
    const result = await runCli(['check', '--config', file('bom.json', `\ufeff${JSON.stringify({ sources: [WEB] })}`)]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.contain('OK (1 sources: web)');
  });
});

describe('eventrelay reports every config problem in one run, and each command reads only what it uses (child processes)', function () {
  this.timeout(120_000);
  const tempDir = useTempDirs('eventrelay-config-all-');
  const EXAMPLE = resolve('packages/forwarder/examples/eventrelay.config.json');
  /** The five variables the example config reads, with the field that reads each. */
  const VARIABLES = [
    ['adminToken', 'EVENTRELAY_ADMIN_TOKEN'],
    ['sources[0].writeKey', 'WEB_WRITE_KEY'],
    ['sources[0].destinations.Webhooks.webhooks[1].headers["Authorization"]', 'BACKUP_HOOK_AUTH'],
    ['sources[0].destinations.Webhooks.sharedSecret', 'WEB_WEBHOOK_SECRET'],
    ['sources[1].writeKey', 'IOS_WRITE_KEY'],
  ] as const;
  const ALL_SET = Object.fromEntries(VARIABLES.map(([, name]) => [name, `value-of-${name.toLowerCase()}`]));

  before(requireBuiltCli);

  for (const command of ['check', 'serve'] as const) {
    it(`${command}: the example config with no variable set names all five in one run, one a line`, async () => {
      const args = command === 'serve' ? ['serve', '--config', EXAMPLE, '--port', '0', '--data', tempDir()] : ['check', '--config', EXAMPLE];
      const result = await runCli(args);
      expect(result.code, result.stdout + result.stderr).to.equal(1);
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines[0]).to.equal(`eventrelay: 5 config errors in ${EXAMPLE}:`);
      expect(lines.slice(1)).to.deep.equal(
        VARIABLES.map(([field, name]) => `  config error at ${field}: \`${field}\` reads the environment variable ${name}, which is not set or empty`),
      );
      expect(result.stderr).not.to.match(/\n\s+at /);
    });
  }

  it('check: OK once the five are set (and the values never printed)', async () => {
    const result = await runCli(['check', '--config', EXAMPLE], ALL_SET);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.equal(`${EXAMPLE}: OK (2 sources: web, ios)\n`);
    expect(result.stdout + result.stderr).not.to.contain('value-of-');
  });

  it('check: problems of other kinds come together too (an unknown field, a bad port, a bad URL, an unset variable, a repeated name)', async () => {
    const file = join(tempDir(), 'many.json');
    writeFileSync(
      file,
      JSON.stringify({
        port: 70000,
        colour: 'blue',
        adminToken: { env: 'NOT_SET_ANYWHERE' },
        sources: [
          { name: 'web', writeKey: 'k1', destinations: { Webhooks: { webhooks: [{ url: 'ftp://hooks.example.com/' }] } } },
          { name: 'web', writeKey: 'k2' },
        ],
      }),
    );
    const result = await runCli(['check', '--config', file]);
    expect(result.code).to.equal(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines[0]).to.equal(`eventrelay: 5 config errors in ${file}:`);
    expect(lines.slice(1).map((line) => /^ {2}config error at (\S+):/.exec(line)?.[1])).to.deep.equal([
      'colour',
      'port',
      'adminToken',
      'sources[0].destinations.Webhooks.webhooks[0].url',
      'sources[1].name',
    ]);
  });

  it('endpoints reads the admin token only: the sources\' secrets need not be set', async () => {
    const token = 'value-of-eventrelay_admin_token';
    const forwarder = createForwarder({
      adminToken: token,
      storage: { type: 'memory' },
      sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.com/eventrelay' }] } } }],
    });
    try {
      const { url } = await forwarder.listen({ port: 0 });
      const shown = await runCli(['endpoints', '--config', EXAMPLE, '--url', url, '--source', 'web'], { EVENTRELAY_ADMIN_TOKEN: token });
      expect(shown.code, shown.stderr).to.equal(0);
      expect(shown.stdout).to.equal('web:\n  enabled   https://hooks.example.com/eventrelay\n');
      // Without the token, that alone is the problem.
      const without = await runCli(['endpoints', '--config', EXAMPLE, '--url', url, '--source', 'web']);
      expect(without.code).to.equal(1);
      expect(without.stderr).to.equal(
        'eventrelay: config error at adminToken: `adminToken` reads the environment variable EVENTRELAY_ADMIN_TOKEN, which is not set or empty\n',
      );
    } finally {
      await forwarder.close();
    }
  });

  it('apply reads the sources and the store: the admin token and notify secret need not be set', async () => {
    const dir = tempDir();
    const file = join(dir, 'apply.json');
    writeFileSync(
      file,
      JSON.stringify({
        adminToken: { env: 'NOT_SET_ANYWHERE' },
        notify: { url: 'https://ops.example.com/n', sharedSecret: { env: 'NOT_SET_EITHER' } },
        storage: { dataDir: join(dir, 'data') },
        sources: [{ name: 'web', writeKey: { env: 'WEB_KEY' } }],
      }),
    );
    const dry = await runCli(['apply', '--config', file, '--dry-run'], { WEB_KEY: 'web-key-1234' });
    expect(dry.code, dry.stderr).to.equal(0);
    expect(dry.stdout).to.contain('dry run: nothing written (1 source would change)');
    // The sources' own variables are read, all of them at once.
    const missing = await runCli(['apply', '--config', file, '--dry-run']);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.equal('eventrelay: config error at sources[0].writeKey: `sources[0].writeKey` reads the environment variable WEB_KEY, which is not set or empty\n');
  });
});
