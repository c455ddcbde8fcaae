import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { basic, post, runCli, serveCli, useReceiver, waitFor, requireBuiltCli } from './helpers';
import type { ServedForwarder } from './helpers';
import { useTempDirs } from '../../../../test/helpers/temp-dir';

describe('eventrelay apply (child processes on the built package)', function () {
  this.timeout(60_000);
  const tempDir = useTempDirs('eventrelay-apply-');
  const receiver = useReceiver();
  let served: ServedForwarder | undefined;

  before(requireBuiltCli);
  after(async () => {
    await served?.stop();
  });

  it('applies a file through a running SQLite forwarder with --url, and says to use --url when the data directory is held', async () => {
    const dir = tempDir();
    const data = join(dir, 'data');
    const env = { ADMIN_TOKEN: 'apply-admin-token', WEB_KEY: 'web-key-from-file-1234' };
    const serveConfig = join(dir, 'serve.json');
    writeFileSync(serveConfig, JSON.stringify({ adminToken: { env: 'ADMIN_TOKEN' } }));
    served = await serveCli(['--config', serveConfig, '--data', data], env);

    const file = join(dir, 'apply.json');
    writeFileSync(
      file,
      JSON.stringify({
        adminToken: { env: 'ADMIN_TOKEN' },
        sources: [{ name: 'web', writeKey: { env: 'WEB_KEY' }, destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/applied`, headers: { 'X-Team': 'web' } }] } } }],
      }),
    );
    const held = await runCli(['apply', '--config', file, '--data', data], env);
    expect(held.code).to.equal(1);
    expect(held.stderr).to.contain('Another forwarder is using the data directory').and.contain('--url http://HOST:PORT');

    const dry = await runCli(['apply', '--config', file, '--url', served.url, '--dry-run'], env);
    expect(dry.code, dry.stderr).to.equal(0);
    expect(dry.stdout).to.contain('+ web: Webhooks added (on, 1 URL); write key …1234 from the file').and.contain('dry run: nothing written');
    expect((await post(`${served.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E' }] }, { Authorization: basic(env.WEB_KEY) })).status).to.equal(401);

    const applied = await runCli(['apply', '--config', file, '--url', served.url], env);
    expect(applied.code, applied.stderr).to.equal(0);
    expect(applied.stdout).to.contain('applied: 1 source changed');
    expect(applied.stdout + applied.stderr).not.to.contain(env.WEB_KEY).and.not.contain(env.ADMIN_TOKEN);
    expect((await post(`${served.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'via-url' }] }, { Authorization: basic(env.WEB_KEY) })).status).to.equal(200);
    await waitFor(() => receiver.delivered.some((r) => r.path === '/applied' && r.json.messageId === 'via-url'), 'the delivery');

    // A bad file is refused by the forwarder with the field, and changes nothing.
    writeFileSync(file, JSON.stringify({ adminToken: { env: 'ADMIN_TOKEN' }, sources: [{ name: 'web', writeKey: { env: 'WEB_KEY' }, destinations: { Webhooks: { webhooks: [] } } }] }));
    const bad = await runCli(['apply', '--config', file, '--url', served.url], env);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.contain('sources[0].destinations.Webhooks.webhooks');

    // Once no forwarder holds the directory, apply opens it directly.
    expect(await served.stop()).to.equal(0);
    served = undefined;
    writeFileSync(file, JSON.stringify({ sources: [{ name: 'web', writeKey: { env: 'WEB_KEY' } }, { name: 'direct', writeKey: 'direct-key-5678' }] }));
    const direct = await runCli(['apply', '--config', file, '--data', data], env);
    expect(direct.code, direct.stderr).to.equal(0);
    expect(direct.stdout).to.contain(`against sqlite in ${data}`).and.contain('~ web: Webhooks removed').and.contain('+ direct: write key …5678 from the file');
    served = await serveCli(['--config', serveConfig, '--data', data], env);
    expect((await post(`${served.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E' }] }, { Authorization: basic('direct-key-5678') })).status).to.equal(200);
  });

  it('refuses a memory store without --url, and a wrong admin token with the forwarder\'s answer', async () => {
    const dir = tempDir();
    const file = join(dir, 'memory.json');
    writeFileSync(file, JSON.stringify({ adminToken: 'wrong-token', storage: { type: 'memory' }, sources: [] }));
    const memory = await runCli(['apply', '--config', file]);
    expect(memory.code).to.equal(1);
    expect(memory.stderr).to.contain('storage.type').and.contain('--url');
    const wrong = await runCli(['apply', '--config', file, '--url', served!.url]);
    expect(wrong.code).to.equal(1);
    expect(wrong.stderr).to.contain('HTTP 401').and.not.contain('wrong-token');
    const misuse = await runCli(['check', '--config', file, '--dry-run']);
    expect(misuse.code).to.equal(2);
  });
});
