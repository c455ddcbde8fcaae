import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { createServer } from 'node:net';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { basic, serveLogged, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';

const WRITE_KEY = 'logs-write-key-0f3a';
const WRONG_KEY = 'wrong-key-77c1';
const ADMIN = 'logs-admin-token-91b2';
const SECRET = 'logs-shared-secret-5d7e';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * `eventrelay serve` under a supervisor: stdout a pipe, read line by line. Every line is one JSON
 * object with `level`, `time` and `msg`; a refused request, a delivery failed for good, start and
 * stop each write one, and a flood of the same refusal writes one line and then a count.
 */
describe('eventrelay serve: operator logs on stdout (a pipe)', function () {
  this.timeout(60_000);
  const tempDir = useTempDirs('eventrelay-logs-');
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
    // Gone for good: the one answer that is final for a URL, whatever the retry policy.
    receiver.failFirst('/gone?token=hidden-query', 1_000_000, 410);
  });
  after(() => receiver?.close());

  const serve = (args: string[], config: object) => serveLogged(config, tempDir(), args);

  const config = {
    adminToken: ADMIN,
    storage: { type: 'memory' },
    sources: [{ name: 'web', writeKey: WRITE_KEY, destinations: { Webhooks: { webhooks: [{ url: `http://127.0.0.1:1/placeholder` }], sharedSecret: SECRET } } }],
  };

  it('writes JSON lines for start, refused ingestion (a flood as one line and a count), a failed delivery, and stop; never a secret', async () => {
    const run = serve([], { ...config, sources: [{ ...config.sources[0], destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/gone?token=hidden-query` }], sharedSecret: SECRET } } }] });
    await waitFor(() => run.lines().some((l) => l.event === 'started') || run.child.exitCode !== null, 'the start line');
    const started = run.lines().find((l) => l.event === 'started')!;
    expect(started).to.include({ level: 'info', service: 'eventrelay' });
    expect(started.msg).to.match(/^listening on http:\/\/127\.0\.0\.1:\d+ \(eventrelay /);
    const url = started.url as string;
    expect(new Date(started.time).toISOString()).to.equal(started.time);

    const post = (key: string, body: string) => fetch(`${url}/v1/batch`, { method: 'POST', headers: { Authorization: basic(key), 'Content-Type': 'application/json' }, body });
    for (let i = 0; i < 5; i++) expect((await post(WRONG_KEY, '{"batch":[]}')).status).to.equal(401);
    expect((await post(WRITE_KEY, '{"batch": [')).status).to.equal(400);
    const track = JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'gone-1' }] });
    expect((await post(WRITE_KEY, track)).status).to.equal(200);
    await waitFor(() => run.lines().some((l) => l.event === 'delivery.failed'), 'the failed delivery\'s line');
    await waitFor(() => run.lines().some((l) => l.reason === 'invalid_json'), 'the invalid JSON line');

    const refused = run.lines().filter((l) => l.event === 'ingest.refused');
    // Five refusals, one line so far: the others are counted until the window ends.
    expect(refused.filter((l) => l.reason === 'unauthorized')).to.have.length(1);
    expect(refused.find((l) => l.reason === 'unauthorized')).to.include({ level: 'warn', status: 401, source: null });
    expect(refused.find((l) => l.reason === 'invalid_json')).to.include({ status: 400, source: 'web' });
    const failed = run.lines().find((l) => l.event === 'delivery.failed')!;
    expect(failed).to.include({ level: 'warn', source: 'web', messageId: 'gone-1', kind: 'message' });
    expect(failed.reason).to.contain('410');
    // A 410 disables the URL at once: a line of its own, the URL without its query.
    await waitFor(() => run.lines().some((l) => l.event === 'endpoint.disabled'), 'the endpoint disabled line');
    const disabled = run.lines().find((l) => l.event === 'endpoint.disabled')!;
    expect(disabled).to.include({ level: 'warn', source: 'web', url: `${receiver.url}/gone?[redacted]` });

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).to.match(/eventrelay_requests_refused_total\{source="",reason="unauthorized"\} 5/);
    expect(metrics).to.match(/eventrelay_requests_refused_total\{source="web",reason="invalid_json"\} 1/);

    run.child.kill('SIGTERM');
    expect(await run.exited).to.equal(0);
    const lines = run.lines();
    // At stop, the count of the refusals not written one by one.
    expect(lines.find((l) => l.event === 'ingest.refused' && l.repeated === 4)).to.include({ reason: 'unauthorized' });
    const events = lines.map((l) => l.event);
    expect(events.at(-1)).to.equal('stopped');
    expect(events.indexOf('stopping')).to.be.above(events.indexOf('delivery.failed'));
    expect(lines.find((l) => l.event === 'stopping')!.msg).to.equal('SIGTERM, finishing attempts in flight');
    for (const line of lines) {
      expect(line.level).to.be.a('string');
      expect(line.time).to.be.a('string');
      expect(line.msg).to.be.a('string');
    }
    for (const secret of [WRITE_KEY, WRONG_KEY, ADMIN, SECRET, 'hidden-query']) expect(run.out() + run.err(), secret).not.to.contain(secret);
  });

  it('--log-level warn leaves the info lines out; log.format "pretty" writes readable lines', async () => {
    // No start line at warn: it listens on a port chosen here.
    const port = await freePort();
    const quiet = serve(['--log-level', 'warn', '--port', String(port)], config);
    await waitFor(async () => quiet.child.exitCode !== null || (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)), 'the quiet one to listen');
    expect((await fetch(`http://127.0.0.1:${port}/v1/batch`, { method: 'POST', headers: { Authorization: basic(WRONG_KEY) }, body: '{}' })).status).to.equal(401);
    await waitFor(() => quiet.out() !== '', 'the refusal\'s line');
    const pretty = serve([], { ...config, log: { format: 'pretty' } });
    await waitFor(() => /listening on http:\/\/\S+/.test(pretty.out()) || pretty.child.exitCode !== null, 'the pretty start line');
    expect(pretty.out()).to.match(/INFO.*listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(() => JSON.parse(pretty.out().split('\n')[0]!)).to.throw();
    pretty.child.kill('SIGTERM');
    expect(await pretty.exited).to.equal(0);
    expect(pretty.out()).to.contain('stopped');
    quiet.child.kill('SIGTERM');
    expect(await quiet.exited).to.equal(0);
    // The refusal (warn) alone: no start or stop line (info).
    expect(quiet.lines().map((l) => [l.level, l.event])).to.deep.equal([['warn', 'ingest.refused']]);
  });

  it('refuses a bad --log-level and a bad log.level, naming them', async () => {
    const flag = serve(['--log-level', 'loud'], config);
    expect(await flag.exited).to.equal(2);
    expect(flag.err()).to.contain('--log-level expects one of debug, info, warn, error, silent, got "loud"');
    const field = serve([], { ...config, log: { level: 'chatty' } });
    expect(await field.exited).to.equal(1);
    expect(field.err()).to.contain('log.level');
  });
});
