import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { basic, post, runCli, serveCli, useReceiver, waitFor, requireBuiltCli } from './helpers';
import type { ServedForwarder } from './helpers';
import { useTempDirs } from '../../../../test/helpers/temp-dir';

describe('eventrelay endpoints (child processes on the built package)', function () {
  this.timeout(60_000);
  const tempDir = useTempDirs('eventrelay-endpoints-cli-');
  const receiver = useReceiver();
  let served: ServedForwarder | undefined;

  before(requireBuiltCli);
  after(async () => {
    await served?.stop();
  });

  it('shows a disabled URL with why, and --enable sends to it again', async () => {
    const dir = tempDir();
    const env = { ADMIN_TOKEN: 'endpoints-admin-token' };
    const config = join(dir, 'eventrelay.config.json');
    writeFileSync(
      config,
      JSON.stringify({
        adminToken: { env: 'ADMIN_TOKEN' },
        sources: [{ name: 'solo', writeKey: 'solo-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/solo?token=hidden` }] } } }],
      }),
    );
    served = await serveCli(['--config', config, '--data', join(dir, 'data')], env);
    // 410 Gone: the message fails and the URL is disabled at once.
    receiver.failFirst('/solo?token=hidden', 1_000_000, 410);
    const stats = async () => (await (await fetch(`${served!.url}/stats`)).json()) as { failed: number; queueDepth: number };
    expect((await post(`${served.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'f0' }] }, { Authorization: basic('solo-key') })).status).to.equal(200);
    await waitFor(async () => (await stats()).failed === 1, 'the failure');
    const states = async () =>
      ((await (await fetch(`${served!.url}/admin/sources/solo/destinations/Webhooks/endpoints`, { headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` } })).json()) as {
        endpoints: { disabled: boolean }[];
      }).endpoints;
    await waitFor(async () => (await states())[0]!.disabled, 'the URL to be disabled');
    const shown = await runCli(['endpoints', '--config', config, '--url', served.url, '--source', 'solo'], env);
    expect(shown.code, shown.stderr).to.equal(0);
    expect(shown.stdout).to.match(new RegExp(`^solo:\\n  disabled  ${receiver.url}/solo\\?\\[redacted\\] since \\S+Z: The receiver answered 410 Gone at \\S+Z: it takes no more deliveries at this URL; last error: HTTP 410: `));
    expect(shown.stdout).not.to.contain('hidden');

    expect((await post(`${served.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'waits' }] }, { Authorization: basic('solo-key') })).status).to.equal(200);
    receiver.failFirst('/solo?token=hidden', 0);
    const enabled = await runCli(['endpoints', '--config', config, '--url', served.url, '--source', 'solo', '--enable', `${receiver.url}/solo?[redacted]`], env);
    expect(enabled.code, enabled.stderr).to.equal(0);
    expect(enabled.stdout).to.equal(`enabled: ${receiver.url}/solo?[redacted]; deliveries go to it again (every instance within 1 s)\nsolo:\n  enabled   ${receiver.url}/solo?[redacted]\n`);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'waits'), 'the message that waited');
    expect((await stats()).failed).to.equal(1);

    const unknown = await runCli(['endpoints', '--config', config, '--url', served.url, '--source', 'nope'], env);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.equal('eventrelay: the forwarder refused (HTTP 404): No source "nope" (name)\n');
    const misplaced = await runCli(['check', '--config', config, '--source', 'solo'], env);
    expect(misplaced.code).to.equal(2);
  });
});
