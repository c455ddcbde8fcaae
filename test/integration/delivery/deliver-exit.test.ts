import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startReceiver } from './receivers';
import type { Receiver } from './receivers';

const script = fileURLToPath(new URL('../../fixtures/delivery/deliver-script.ts', import.meta.url));

function run(url: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--import', 'tsx', script, url], { env: { ...process.env, DEBUG: '' } }, (_error, stdout) =>
      resolve({ code: child.exitCode, stdout }),
    );
  });
}

describe('WebhookDestination#deliver() awaited in a script (issue 9.6)', function () {
  this.timeout(30_000);
  let receiver: Receiver | undefined;
  afterEach(() => receiver?.close());

  it('keeps the process alive through a retry: 503 then 200 resolves as delivered, then the process exits 0', async () => {
    receiver = await startReceiver((_req, res, _received, count) => void res.writeHead(count === 1 ? 503 : 200).end());
    const { code, stdout } = await run(receiver.url);
    expect(receiver.requests).to.have.length(2);
    expect(JSON.parse(stdout.trim())).to.deep.equal({ status: 'delivered', attempt: 2 });
    expect(code).to.equal(0);
  });
});
