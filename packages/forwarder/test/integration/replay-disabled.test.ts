import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { usePostgres } from '../../../../test/helpers/postgres';
import { basic, post, runCli, useReceiver, waitFor } from './helpers';

const ADMIN = 'replay-disabled-admin-token-91c3';
const PASSWORD = 'hunter2-in-the-url';

/**
 * A replay whose every URL is disabled would wait in the queue unseen: the API answers 409
 * `endpoint_disabled` naming the URLs (no password), and the CLI exits non-zero with how to enable them.
 */
for (const backend of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`replay of a delivery whose every URL is disabled (${backend} store, the built CLI)`, function () {
    this.timeout(60_000);
    const tempDir = useTempDirs('eventrelay-replay-disabled-');
    const db = backend === 'postgres' ? usePostgres() : undefined;
    const receiver = useReceiver();
    let forwarder: Forwarder;
    let url: string;
    let id: number;
    let file: string;

    before(async () => {
      const hook = receiver.url.replace('http://', `http://user:${PASSWORD}@`);
      forwarder = createForwarder({
        adminToken: ADMIN,
        storage: backend === 'postgres' ? { type: 'postgres', url: db!.url, poolSize: 4 } : backend === 'sqlite' ? { type: 'sqlite', dataDir: tempDir() } : { type: 'memory' },
        sources: [{ name: 'web', writeKey: 'replay-key', destinations: { Webhooks: { webhooks: [{ url: `${hook}/gone` }] } } }],
      });
      ({ url } = await forwarder.listen({ port: 0, host: '127.0.0.1' }));
      // A 410 Gone fails the call for good and disables its URL at once.
      receiver.failFirst('/gone', 1_000_000, 410);
      expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'to-replay' }] }, { Authorization: basic('replay-key') })).status).to.equal(200);
      await waitFor(async () => (await forwarder.stats()).failed === 1, 'the call to fail');
      await waitFor(async () => (await forwarder.endpoints('web'))[0]!.disabled, 'the URL to be disabled');
      const listed = await fetch(`${url}/admin/messages?messageId=to-replay`, { headers: { Authorization: `Bearer ${ADMIN}` } }).then((r) => r.json() as Promise<{ items: { id: number }[] }>);
      id = listed.items[0]!.id;
      file = join(tempDir(), 'admin.json');
      writeFileSync(file, JSON.stringify({ adminToken: ADMIN }));
    });
    after(async () => {
      await forwarder?.close();
    });

    const replay = () => fetch(`${url}/admin/deliveries/${id}/replay`, { method: 'POST', headers: { Authorization: `Bearer ${ADMIN}` } });

    it('answers 409 endpoint_disabled naming the URLs without the password, with how to enable them; nothing is queued', async () => {
      const answer = await replay();
      expect(answer.status).to.equal(409);
      const text = await answer.text();
      expect(text).to.not.contain(PASSWORD);
      const { error } = JSON.parse(text) as { error: { code: string; message: string; urls: string[] } };
      expect(error.code).to.equal('endpoint_disabled');
      expect(error.urls).to.have.length(1);
      expect(error.urls[0]).to.contain(`${new URL(receiver.url).host}/gone`);
      expect(error.message).to.contain(error.urls[0]).and.contain('eventrelay endpoints --source web --enable').and.contain('/endpoints/enable');
      expect((await forwarder.stats()).queueDepth).to.equal(0);
    });

    it('eventrelay replay ID exits 1 and prints the hint, never the password', async () => {
      const run = await runCli(['replay', String(id), '--config', file, '--url', url]);
      expect(run.code).to.equal(1);
      expect(run.stderr).to.contain('every URL of the source "web" is disabled').and.contain('eventrelay endpoints --source web --enable');
      expect(run.stdout + run.stderr).to.not.contain(PASSWORD);
    });

    it('once a URL is enabled again, the replay is queued and delivered', async () => {
      receiver.failFirst('/gone', 0);
      const enabled = await fetch(`${url}/admin/sources/web/destinations/Webhooks/endpoints/enable`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: `${receiver.url.replace('http://', `http://user:${PASSWORD}@`)}/gone` }),
      });
      expect(enabled.status).to.equal(200);
      expect((await replay()).status).to.equal(202);
      await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'to-replay'), 'the replayed call');
    });
  });
}
