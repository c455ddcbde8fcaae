import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startSink } from '../../../../../test/helpers/sink';

const script = `
import { Analytics } from ${JSON.stringify(fileURLToPath(new URL('../../../src/index.ts', import.meta.url)))};
const analytics = new Analytics({ writeKey: 'wk_SECRET_KEY', endpoint: process.env.SINK, minRetryDelay: 1 });
analytics.track({ userId: 'u1', event: 'Secret Event', properties: { card: 'PRIVATE_VALUE' } });
analytics.track({ event: 'no user' });
await analytics.closeAndFlush();
`;

describe('DEBUG=analytics logging', () => {
  it('logs flushes, requests, retries and statuses, never the write key or message bodies', async () => {
    const sink = await startSink((_req, res, index) => res.writeHead(index === 0 ? 503 : 200).end('{}'));
    try {
      const run = () =>
        new Promise<{ stderr: string; status: number | null }>((resolve) => {
          // spawnSync would block the event loop the sink needs, so run it async.
          import('node:child_process').then(({ spawn }) => {
            const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', '--input-type=module', '-e', script], {
              env: { ...process.env, DEBUG: 'analytics', DEBUG_COLORS: '0', SINK: sink.url },
            });
            let stderr = '';
            child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
            child.on('close', (status) => resolve({ stderr, status }));
          });
        });
      const { stderr, status } = await run();
      expect(status).to.equal(0);
      expect(stderr).to.match(/analytics flush \(close\): 1 messages/);
      expect(stderr).to.match(/retry 1 of a batch of 1 in \d+ ms after .* answered 503/);
      expect(stderr).to.match(/batch of 1 messages delivered in \d+ ms/);
      expect(stderr).to.match(/refused a message: A track message needs `userId` or `anonymousId`/);
      expect(stderr).not.to.contain('wk_SECRET_KEY');
      expect(stderr).not.to.contain(Buffer.from('wk_SECRET_KEY:').toString('base64'));
      expect(stderr).not.to.contain('PRIVATE_VALUE');
      expect(stderr).not.to.contain('Secret Event');
      expect(sink.requests).to.have.length(2);
    } finally {
      await sink.close();
    }
  });

  it('without DEBUG, writes no debug line: only a warning per error that no callback or listener heard, never the write key or a body', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', '--input-type=module', '-e', script.replace('process.env.SINK', "'http://127.0.0.1:9'").replace('minRetryDelay: 1', 'minRetryDelay: 1, maxRetries: 0')], {
      env: { ...process.env, DEBUG: '' },
      encoding: 'utf8',
    });
    expect(result.status).to.equal(0);
    const lines = result.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('(Use `node --trace-warnings'));
    expect(lines).to.have.length(2);
    expect(lines[0]).to.match(/^\(node:\d+\) \[ERR_VALIDATION\] EventRelayWarning: A track message needs `userId` or `anonymousId`/);
    expect(lines[1]).to.match(/^\(node:\d+\) \[ERR_NETWORK\] EventRelayWarning: Request to http:\/\/127\.0\.0\.1:9\/v1\/batch failed: connection refused/);
    expect(result.stderr).not.to.contain('wk_SECRET_KEY');
    expect(result.stderr).not.to.contain('PRIVATE_VALUE');
    expect(result.stderr).not.to.contain('Secret Event');
  });
});
