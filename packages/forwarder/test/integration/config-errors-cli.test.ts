import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { join } from 'node:path';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { CLI, runCli } from './helpers';

const WEB = { name: 'web', writeKey: 'web-key' };

describe('eventrelay check and serve refuse every kind of bad config naming its field (child processes)', function () {
  this.timeout(120_000);
  const tempDir = useTempDirs('eventrelay-config-errors-');
  let dir: string;
  let taken: Server;
  let takenPort: number;

  before(async () => {
    if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run `npm run build` first (npm test does)');
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

  it('reads a file that starts with a byte order mark', async () => {
    const result = await runCli(['check', '--config', file('bom.json', `\ufeff${JSON.stringify({ sources: [WEB] })}`)]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.contain('OK (1 sources: web)');
  });
});
