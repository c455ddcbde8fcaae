import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { diagnose, kill, startClient, stop, useClientProcesses, waitFor } from './processes';
import { useTempDirs } from '../../../../../test/helpers/temp-dir';

/**
 * Issue 35: on a full disk, a call `track()` accepted is on disk. A client fills a small disk
 * against an endpoint that is down, is killed with SIGKILL, and a later client on the same
 * directory delivers every call the first one accepted; the calls it refused never arrive.
 */
describe('the spool on a full disk, across SIGKILL (child processes on the built package)', function () {
  this.timeout(90_000);
  const tempDir = useTempDirs('eventrelay-spool-full-');
  const suite = useClientProcesses();

  /** Fills the disk of `dir` with calls of a first process, kills it, and checks what a later process delivers. */
  async function fillKillRecover(dir: string, prefix: string, count: number, env: Record<string, string>): Promise<void> {
    suite.sink.up = false;
    const first = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: prefix, KEY: `key-${prefix}`, MODE: 'burst', COUNT: String(count), ...env });
    suite.children.push(first);
    await waitFor(() => first.finished, 'every call made', 60_000);
    // The report of the last turn comes after its write and its refusals.
    await waitFor(() => first.accepted.size + first.refused.size === count, `each of the ${count} calls accepted or refused`, 10_000).catch((error: Error) => {
      throw new Error(`${error.message}: ${first.accepted.size} accepted, ${first.refused.size} refused; stderr ${first.output().slice(-500)}`);
    });
    expect(first.refused.size, 'calls refused once the disk was full').to.be.above(0);
    expect(first.accepted.size, 'calls accepted before').to.be.above(0);
    expect(first.errors.filter((code) => code === 'ERR_SPOOL_WRITE')).to.have.length(first.refused.size);
    await kill(first);
    suite.sink.retire(`key-${prefix}`);

    suite.sink.up = true;
    const last = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: `${prefix}last`, KEY: `key-${prefix}-last`, MODE: 'idle' });
    suite.children.push(last);
    await waitFor(() => [...first.accepted].every((id) => suite.sink.count(id) > 0), 'every accepted call at the sink', 60_000).catch((error: Error) => {
      throw new Error(`${error.message}: ${diagnose(suite.sink, first.accepted, dir, last)}`);
    });
    await stop(last);
    expect([...first.refused].filter((id) => suite.sink.count(id) > 0), 'refused calls that arrived').to.deep.equal([]);
    expect(readdirSync(dir)).to.deep.equal([]);
  }

  it('on a disk that answers ENOSPC (an fs seam), every call track() accepted is delivered by a later client; the refused ones never', async () => {
    // About a fifth of the calls fit.
    await fillKillRecover(tempDir(), 'seam', 3000, { DISK_BYTES: String(200_000) });
  });

  it('on a real 2 MB tmpfs (root only), the same, the later client starting on the full disk', async function () {
    const mountPoint = tempDir();
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mountPoint], { stdio: 'pipe' });
    } catch (error) {
      // Not root, or no mount(8) in this container: said, not silently passed.
      const why = process.getuid?.() === 0 ? `mount -t tmpfs failed: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}` : 'not running as root';
      console.log(`      skipped: cannot mount a 2 MB tmpfs (${why})`);
      this.skip();
    }
    try {
      await fillKillRecover(mountPoint, 'tmpfs', 12_000, {});
    } finally {
      for (const { child, exited } of suite.children.splice(0)) {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      }
      execFileSync('umount', [mountPoint]);
    }
  });
});
