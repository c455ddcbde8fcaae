import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../fixtures/webhooks/without-node-crypto.ts', import.meta.url));

describe('eventrelay/webhooks without node:crypto (edge runtimes)', function () {
  this.timeout(30_000);

  it('loads, verifies with Web Crypto, and says which functions to use instead of the sync ones', async () => {
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', script], (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)));
    });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).to.deep.equal({
      sync: 'ERR_UNSUPPORTED_RUNTIME',
      async: true,
      signAsync: true,
      fetchSigned: 204,
      fetchUnsigned: 401,
      core: 204,
    });
  });
});
