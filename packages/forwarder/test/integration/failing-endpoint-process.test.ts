import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { usePostgres } from '../../../../test/helpers/postgres';
import { basic, runCli, serveLogged, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';

const WRITE_KEY = 'failing-write-key-6d1e';
const ADMIN = 'failing-admin-token-0b9c';
const SECRET = 'failing-shared-secret-2f4a';

interface Attempt {
  readonly attempt: number;
  readonly status: number | null;
  readonly responseBody: string | null;
}

/**
 * Seeing a failing receiver while it fails, from a real `eventrelay serve` (its stdout a pipe):
 * a receiver answers 500, then 401 "bad signature", then heals. The operator's log says so once
 * (`endpoint.failing`), not again within the minute however many attempts fail, and says when it
 * recovered; the delivery log keeps each answer, and finds the call by its event name, through
 * the admin API and the CLI. On SQLite and on PostgreSQL.
 */
for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`eventrelay serve: a failing endpoint, seen (${backend})`, function () {
    this.timeout(90_000);
    const tempDir = useTempDirs('eventrelay-failing-');
    const db = backend === 'postgres' ? usePostgres() : undefined;
    let receiver: Receiver;
    before(async () => {
      receiver = await startReceiver();
    });
    after(() => receiver?.close());

    it('logs endpoint.failing once with the answer, nothing more within the minute, endpoint.recovered when it heals; the answers and the event are in the log', async () => {
      const storage = backend === 'postgres' ? { type: 'postgres', url: db!.url, poolSize: 4 } : { type: 'sqlite', dataDir: tempDir() };
      const hook = `${receiver.url}/hook?token=hidden-query`;
      const run = serveLogged({
        adminToken: ADMIN,
        storage,
        // Retried every few ms for a minute: many failed attempts while the test watches.
        delivery: { minRetryDelay: 20, maxRetryDelay: 50, retryWindow: 600_000 },
        sources: [{ name: 'web', writeKey: WRITE_KEY, destinations: { Webhooks: { webhooks: [{ url: hook }], sharedSecret: SECRET } } }],
      }, tempDir());
      try {
        await waitFor(() => run.lines().some((l) => l.event === 'started') || run.child.exitCode !== null, 'the start line', 30_000);
        const url = run.lines().find((l) => l.event === 'started')!.url as string;
        const admin = async <T>(path: string): Promise<T> => {
          const response = await fetch(`${url}${path}`, { headers: { Authorization: `Bearer ${ADMIN}` } });
          expect(response.status, path).to.equal(200);
          return (await response.json()) as T;
        };

        receiver.failFirst('/hook?token=hidden-query', 1_000_000, 500, 'database\nis down');
        const batch = [
          { type: 'track', userId: 'u1', event: 'Order Completed', messageId: 'order-1', properties: { secret: 'body-only-7c' } },
          { type: 'track', userId: 'u1', event: 'Order Completed Twice', messageId: 'order-2' },
          { type: 'identify', userId: 'u1', messageId: 'identify-1' },
        ];
        const sent = await fetch(`${url}/v1/batch`, { method: 'POST', headers: { Authorization: basic(WRITE_KEY), 'Content-Type': 'application/json' }, body: JSON.stringify({ batch }) });
        expect(sent.status).to.equal(200);
        await waitFor(() => run.lines().some((l) => l.event === 'endpoint.failing'), 'the endpoint.failing line', 30_000);
        const first = run.lines().find((l) => l.event === 'endpoint.failing')!;
        expect(first).to.include({ level: 'warn', source: 'web', url: `${receiver.url}/hook?[redacted]`, status: 500, response: 'database\\nis down', failedAttempts: 1 });

        // The receiver now says why; attempts keep failing, each answer kept in the log.
        receiver.failFirst('/hook?token=hidden-query', 1_000_000, 401, 'bad signature');
        const found = await admin<{ items: { id: number; messageId: string; event: string | null }[] }>('/admin/messages?event=Order%20Completed');
        expect(found.items.map((m) => [m.messageId, m.event])).to.deep.equal([['order-1', 'Order Completed']]);
        const id = found.items[0]!.id;
        let attempts: Attempt[] = [];
        await waitFor(
          async () => {
            attempts = (await admin<{ attemptLog: Attempt[] }>(`/admin/deliveries/${id}`)).attemptLog;
            return attempts.filter((a) => a.responseBody === 'bad signature').length >= 3;
          },
          'three attempts answered "bad signature"',
          30_000,
        );
        expect(attempts[0]).to.include({ status: 500, responseBody: 'database\nis down' });
        expect(attempts.filter((a) => a.status === 401).every((a) => a.responseBody === 'bad signature')).to.equal(true);
        const identify = await admin<{ items: { event: string | null; type: string }[] }>('/admin/messages?type=identify');
        expect(identify.items.map((m) => [m.type, m.event])).to.deep.equal([['identify', null]]);

        // The CLI finds it by its event, shows the event, and (--json) the answers.
        const cliFile = join(tempDir(), 'cli.json');
        writeFileSync(cliFile, JSON.stringify({ adminToken: { env: 'CLI_ADMIN' }, sources: [] }));
        const table = await runCli(['deliveries', '--event', 'Order Completed', '--config', cliFile, '--url', url], { CLI_ADMIN: ADMIN });
        expect(table.code, table.stderr).to.equal(0);
        const rows = table.stdout.trim().split('\n');
        expect(rows).to.have.length(2);
        expect(rows[0]).to.match(/\bevent\b/);
        expect(rows[1]).to.contain('Order Completed').and.contain('order-1');
        const json = await runCli(['deliveries', '--event', 'Order Completed', '--json', '--config', cliFile, '--url', url], { CLI_ADMIN: ADMIN });
        const listed = JSON.parse(json.stdout) as { messageId: string; event: string; attemptLog: Attempt[] }[];
        expect(listed.map((m) => [m.messageId, m.event])).to.deep.equal([['order-1', 'Order Completed']]);
        expect(listed[0]!.attemptLog.map((a) => a.responseBody)).to.include('bad signature');

        // It heals: one endpoint.recovered line, after the one endpoint.failing line of the minute.
        receiver.failFirst('/hook?token=hidden-query', 0);
        await waitFor(() => run.lines().some((l) => l.event === 'endpoint.recovered'), 'the endpoint.recovered line', 30_000);
        const lines = run.lines();
        const recovered = lines.find((l) => l.event === 'endpoint.recovered')!;
        expect(recovered).to.include({ level: 'info', source: 'web', url: `${receiver.url}/hook?[redacted]`, status: 200 });
        const failedAttempts = recovered.failedAttempts as number;
        // Three for order-1 alone (and the other two calls failed alongside).
        expect(failedAttempts).to.be.at.least(5);
        expect(recovered.failedForMs).to.be.a('number');
        // At most one endpoint.failing line a minute: those written while it failed are a minute apart.
        const failing = lines.filter((l) => l.event === 'endpoint.failing');
        for (let i = 1; i < failing.length; i++) {
          expect(Date.parse(failing[i]!.time) - Date.parse(failing[i - 1]!.time)).to.be.at.least(60_000);
          expect(failing[i]!.failedSinceLast).to.be.a('number');
        }
        if (Date.parse(recovered.time) - Date.parse(first.time) < 60_000) expect(failing).to.have.length(1);
        expect(lines.indexOf(recovered)).to.be.above(lines.indexOf(failing.at(-1)!));

        // Delivered, and the body not kept (keepDelivered 0): the answers went with it.
        await waitFor(async () => (await admin<{ status: string }>(`/admin/deliveries/${id}`)).status === 'delivered', 'order-1 delivered', 30_000);
        const done = await admin<{ body: string | null; attemptLog: Attempt[] }>(`/admin/deliveries/${id}`);
        expect(done.body).to.equal(null);
        expect(done.attemptLog.map((a) => a.responseBody)).to.satisfy((list: (string | null)[]) => list.every((b) => b === null));

        run.child.kill('SIGTERM');
        expect(await run.exited).to.equal(0);
        for (const secret of [WRITE_KEY, ADMIN, SECRET, 'hidden-query', 'body-only-7c']) expect(run.out() + run.err(), secret).not.to.contain(secret);
      } finally {
        if (run.child.exitCode === null) {
          run.child.kill('SIGTERM');
          await run.exited;
        }
      }
    });
  });
}
