import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { basic, post, runCli, useReceiver, waitFor } from './helpers';

const ADMIN = 'operations-cli-admin-token-4e2b';

/**
 * `eventrelay deliveries`, `replay` and `recover` against a running forwarder: the built CLI, the
 * admin API, a table or JSON, and the file's `adminToken` alone read (the sources' secrets may be
 * unset), never printed.
 */
describe('eventrelay deliveries, replay and recover (the built CLI, a running forwarder)', function () {
  this.timeout(60_000);
  const tempDir = useTempDirs('eventrelay-ops-cli-');
  const receiver = useReceiver();
  let forwarder: Forwarder;
  let url: string;
  let file: string;
  const start = new Date(Date.now() - 1000).toISOString();

  before(async () => {
    forwarder = createForwarder({
      adminToken: ADMIN,
      storage: { type: 'memory' },
      // Failed for good within a moment: the receiver answers 503 until told otherwise.
      delivery: { retryWindow: 0, minRetryDelay: 10, maxRetryDelay: 20 },
      sources: [{ name: 'web', writeKey: 'ops-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/ops` }] } } }],
    });
    ({ url } = await forwarder.listen({ port: 0 }));
    receiver.failFirst('/ops', 1_000_000, 503, 'down for maintenance');
    const batch = ['m1', 'm2', 'm3'].map((messageId) => ({ type: 'track', userId: 'u', event: 'E', messageId }));
    expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic('ops-key') })).status).to.equal(200);
    await waitFor(async () => (await forwarder.stats()).failed === 3, 'three failed deliveries');
    // The file's sources need secrets that are not set: these commands read only adminToken.
    file = join(tempDir(), 'ops.json');
    writeFileSync(file, JSON.stringify({ adminToken: { env: 'OPS_ADMIN' }, sources: [{ name: 'web', writeKey: { env: 'NOT_SET_HERE' } }] }));
  });
  after(async () => {
    await forwarder?.close();
  });

  const cli = (args: string[]) => runCli([...args, '--config', file, '--url', url], { OPS_ADMIN: ADMIN });

  it('lists failed deliveries as a table and as JSON', async () => {
    const listed = await cli(['deliveries', '--status', 'failed', '--source', 'web']);
    expect(listed.code, listed.stderr).to.equal(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).to.match(/^id\s+status\s+source\s+type\s+event\s+messageId\s+attempts\s+received\s+reason$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(1, 6))).to.deep.equal([
      ['failed', 'web', 'track', 'E', 'm3'],
      ['failed', 'web', 'track', 'E', 'm2'],
      ['failed', 'web', 'track', 'E', 'm1'],
    ]);
    const json = await cli(['deliveries', '--status', 'failed', '--json']);
    expect(json.code).to.equal(0);
    type Item = { messageId: string; status: string; event: string; attemptLog: { status: number; responseBody: string | null }[] };
    const items = JSON.parse(json.stdout) as Item[];
    expect(items.map((i) => [i.messageId, i.status, i.event])).to.deep.equal([['m3', 'failed', 'E'], ['m2', 'failed', 'E'], ['m1', 'failed', 'E']]);
    // With each delivery's attempts and what the receiver answered.
    for (const item of items) expect(item.attemptLog.map((a) => [a.status, a.responseBody])).to.deep.include([503, 'down for maintenance']);
    expect((await cli(['deliveries', '--status', 'delivered'])).stdout).to.equal('no deliveries match\n');
    // By event name, exactly.
    const byEvent = await cli(['deliveries', '--event', 'E']);
    expect(byEvent.code, byEvent.stderr).to.equal(0);
    expect(byEvent.stdout.trim().split('\n')).to.have.length(4);
    expect((await cli(['deliveries', '--event', 'e'])).stdout).to.equal('no deliveries match\n');
    expect((await cli(['replay', '1', '--event', 'E'])).stderr).to.contain('--event goes with deliveries');
    expect(listed.stdout + listed.stderr + json.stdout).not.to.contain(ADMIN);
  });

  it('replays one by id, then recovers the rest of the source since a time', async () => {
    receiver.failFirst('/ops', 0);
    const items = JSON.parse((await cli(['deliveries', '--status', 'failed', '--json'])).stdout) as { id: number; messageId: string }[];
    const m1 = items.find((i) => i.messageId === 'm1')!;
    const replayed = await cli(['replay', String(m1.id)]);
    expect(replayed.code, replayed.stderr).to.equal(0);
    expect(replayed.stdout).to.equal(`delivery ${m1.id} queued again (attempt series 2)\n`);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'm1'), 'the replayed delivery');
    const recovered = await cli(['recover', '--source', 'web', '--since', start, '--json']);
    expect(recovered.code, recovered.stderr).to.equal(0);
    expect(JSON.parse(recovered.stdout)).to.include({ source: 'web', queued: 2 });
    await waitFor(() => receiver.delivered.filter((r) => r.path === '/ops').length === 3, 'the recovered deliveries');
    expect(receiver.delivered.map((r) => r.json.messageId).sort()).to.deep.equal(['m1', 'm2', 'm3']);
    // Delivered now: nothing left to replay.
    const again = await cli(['replay', String(m1.id)]);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.contain('the forwarder refused (HTTP 409)');
  });

  it('refuses bad use with the fix: no id, no --since, an unknown status, a wrong token, no forwarder', async () => {
    const noId = await cli(['replay']);
    expect(noId.code).to.equal(2);
    expect(noId.stderr).to.contain('replay needs the delivery id');
    const noSince = await cli(['recover', '--source', 'web']);
    expect(noSince.code).to.equal(2);
    expect(noSince.stderr).to.contain('recover needs --since');
    const badStatus = await cli(['deliveries', '--status', 'lost']);
    expect(badStatus.code).to.equal(1);
    expect(badStatus.stderr).to.contain('(status)');
    const wrongToken = await runCli(['deliveries', '--config', file, '--url', url], { OPS_ADMIN: 'not-the-token' });
    expect(wrongToken.code).to.equal(1);
    expect(wrongToken.stderr).to.contain('HTTP 401').and.not.contain('not-the-token');
    const nobody = await runCli(['deliveries', '--config', file, '--url', 'http://127.0.0.1:1'], { OPS_ADMIN: ADMIN });
    expect(nobody.code).to.equal(1);
    expect(nobody.stderr).to.contain('cannot reach the forwarder at http://127.0.0.1:1');
    const misplaced = await runCli(['check', '--config', file, '--json']);
    expect(misplaced.code).to.equal(2);
    expect(misplaced.stderr).to.contain('--json goes with deliveries and replay and recover');
  });
});
