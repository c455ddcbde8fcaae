import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startSink } from '../../../../../test/helpers/sink';
import type { Sink } from '../../../../../test/helpers/sink';

const script = fileURLToPath(new URL('../../fixtures/delivery/deliver-script.ts', import.meta.url));

function run(url: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', script, url], { env: { ...process.env, DEBUG: '' } }, (_error, stdout) =>
      resolve({ code: child.exitCode, stdout }),
    );
  });
}

describe('WebhookDestination#deliver() awaited in a script (issue 9.6)', function () {
  this.timeout(30_000);
  let receiver: Sink | undefined;
  afterEach(() => receiver?.close());

  it('keeps the process alive through a retry: 503 then 200 resolves as delivered, then the process exits 0', async () => {
    receiver = await startSink((_request, res, index) => void res.writeHead(index === 0 ? 503 : 200).end(), { path: '/hook' });
    const { code, stdout } = await run(receiver.url);
    expect(receiver.requests).to.have.length(2);
    expect(JSON.parse(stdout.trim())).to.deep.equal({ status: 'delivered', attempt: 2 });
    expect(code).to.equal(0);
  });
});
