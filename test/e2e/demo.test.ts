import { describe, it } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

describe('examples/demo.mjs (the main job, on the built package)', () => {
  it('exits 0 with every expected webhook verified and the All:false call absent', async function () {
    this.timeout(40_000);
    if (!existsSync('packages/forwarder/dist/index.js')) throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
    const child = spawn(process.execPath, ['examples/demo.mjs'], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, out).to.equal(0);
    expect(out).to.match(/OK: 13\/13 expected webhooks arrived with a valid signature/);
    expect(out).to.match(/the All:false call did not arrive/);
    // The receiver that answered 503 first shows a retry.
    expect(out).to.match(/ios {2}message \w+ {2}attempt 1: retry \(HTTP 503\)/);
    expect(out).not.to.match(/MISSING|LEAKED|REJECTED/);
  });
});
