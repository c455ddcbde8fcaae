import { expect } from 'chai';
import { existsSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, SpoolError, type EventRelayError } from '../../../src/errors';
import { FILE_HEADER_BYTES, FORMAT_VERSION, crc32, fileHeader, scanRecords } from '../../../src/client/spool/format';
import { nodeRuntime } from '../../../src/client/spool/fs';
import { Spool, type SpoolRecord, type SpoolRecovery } from '../../../src/client/spool/spool';
import type { ResolvedSpoolOptions } from '../../../src/client/spool/options';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { useTempDirs } from '../../../../../test/helpers/temp-dir';
import { DEAD_PID, FaultyFs, deadOwner, runtimeWith } from './spool-seams';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const json = (n: number, pad = 0) => JSON.stringify({ type: 'track', messageId: `m-${n}`, event: 'E', pad: 'x'.repeat(pad) });
const host = nodeRuntime()!.host;

function open(dir: string, options: Partial<ResolvedSpoolOptions> = {}, internals: { staleAfter?: number; scanInterval?: number } = {}) {
  const clock = new FakeClock();
  const fs = new FaultyFs();
  const errors: EventRelayError[] = [];
  const resent: SpoolRecord[] = [];
  const recoveries: SpoolRecovery[] = [];
  /** What each turn's write told the client: undefined (written) or the error of its calls. */
  const written: (SpoolError | undefined)[] = [];
  const spool = Spool.open(
    { dir, maxBytes: 104_857_600, sync: 'none', onWriteError: 'refuse', ...options },
    {
      clock,
      report: (e) => errors.push(e),
      written: (failure) => written.push(failure),
      resend: (records) => resent.push(...records),
      recovered: (info) => recoveries.push(info),
    },
    { runtime: runtimeWith(fs), ...internals },
  );
  const admit = (n: number, pad = 0) => {
    const text = json(n, pad);
    return spool.admit(text, Buffer.byteLength(text), clock.now());
  };
  return { spool, clock, fs, errors, resent, recoveries, written, admit };
}

/** The segment files in `dir` with the JSON of the messages each holds (acked ones left out). */
function segments(dir: string): Map<string, string[]> {
  const files = readdirSync(dir).filter((n) => n.endsWith('.seg')).sort();
  return new Map(files.map((name) => [name, scanRecords(readFileSync(join(dir, name)), crc32).messages.map((m) => m.json)]));
}

const all = (dir: string) => [...segments(dir).values()].flat();

describe('Spool', () => {
  const tempDir = useTempDirs('eventrelay-spool-');
  const opened: Spool[] = [];
  afterEach(() => {
    for (const spool of opened.splice(0)) spool.close();
  });
  const track = <T extends { spool: Spool }>(made: T): T => {
    opened.push(made.spool);
    return made;
  };

  describe('writing', () => {
    it('writes all the calls of one turn in one write, before the next turn', async () => {
      const dir = tempDir();
      const { fs, admit } = track(open(dir));
      await nextTurn();
      const before = fs.count('writeSync');
      for (let i = 0; i < 50; i++) admit(i);
      expect(fs.count('writeSync')).to.equal(before);
      await nextTurn();
      expect(fs.count('writeSync')).to.equal(before + 1);
      expect(all(dir)).to.deep.equal(Array.from({ length: 50 }, (_, i) => json(i)));
    });

    it('writes once per turn that had calls', async () => {
      const dir = tempDir();
      const { fs, admit } = track(open(dir));
      await nextTurn();
      const before = fs.count('writeSync');
      admit(1);
      admit(2);
      await nextTurn();
      admit(3);
      await nextTurn();
      await nextTurn();
      expect(fs.count('writeSync')).to.equal(before + 2);
      expect(all(dir)).to.deep.equal([json(1), json(2), json(3)]);
    });

    it('acks delivered records and empties the file back to its header once every record was delivered', async () => {
      const dir = tempDir();
      const { spool, admit } = track(open(dir));
      const records = [admit(1)!, admit(2)!, admit(3)!];
      await nextTurn();
      spool.release([records[1]!], 'delivered');
      await nextTurn();
      expect(all(dir)).to.deep.equal([json(1), json(3)]);
      spool.release([records[0]!, records[2]!], 'delivered');
      await nextTurn();
      const [file] = [...segments(dir).keys()];
      expect(statSync(join(dir, file!)).size).to.equal(FILE_HEADER_BYTES);
    });

    it('never writes a call delivered before its turn was written', async () => {
      const dir = tempDir();
      const { spool, fs, admit } = track(open(dir));
      await nextTurn();
      const before = fs.count('writeSync');
      spool.release([admit(1)!], 'delivered');
      await nextTurn();
      expect(fs.count('writeSync')).to.equal(before);
    });

    it('keeps what failed, and sends it again after the next delivered batch', async () => {
      const dir = tempDir();
      const { spool, admit, resent } = track(open(dir));
      const failed = [admit(1)!, admit(2)!];
      const later = admit(3)!;
      await nextTurn();
      spool.release(failed, 'retry');
      expect(resent).to.deep.equal([]);
      spool.release([later], 'delivered');
      expect(resent.map((r) => r.json)).to.deep.equal([json(1), json(2)]);
      await nextTurn();
      expect(all(dir)).to.deep.equal([json(1), json(2)]);
    });

    it('starts a new file when the one written is full, and deletes the full one once its records are delivered', async () => {
      const dir = tempDir();
      const { spool, admit } = track(open(dir, { maxBytes: 524_288 }));
      const first = Array.from({ length: 70 }, (_, i) => admit(i, 1000)!);
      await nextTurn();
      const second = Array.from({ length: 5 }, (_, i) => admit(100 + i, 1000)!);
      await nextTurn();
      expect([...segments(dir).values()].map((messages) => messages.length)).to.deep.equal([70, 5]);
      spool.release(first, 'delivered');
      await nextTurn();
      expect([...segments(dir).values()].map((messages) => messages.length)).to.deep.equal([5]);
      spool.release(second, 'delivered');
      await nextTurn();
      expect([...segments(dir).values()]).to.deep.equal([[]]);
    });

    it('refuses a call past maxBytes, and takes calls again once records are delivered', async () => {
      const dir = tempDir();
      const { spool, admit } = track(open(dir, { maxBytes: 65_536 }));
      const held: SpoolRecord[] = [];
      for (let i = 0; ; i++) {
        const record = admit(i, 1000);
        if (record === undefined) break;
        held.push(record);
        if (i % 10 === 9) await nextTurn();
      }
      await nextTurn();
      const bytes = [...segments(dir).keys()].reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
      expect(bytes).to.be.at.most(65_536).and.above(60_000);
      expect(held.length).to.be.above(50);
      spool.release(held, 'delivered');
      await nextTurn();
      expect(admit(999, 1000)).to.not.equal(undefined);
    });

    it('fdatasyncs each write with sync: always, and not without', async () => {
      for (const sync of ['none', 'always'] as const) {
        const dir = tempDir();
        const { fs, admit } = track(open(dir, { sync }));
        await nextTurn();
        const before = fs.count('fdatasyncSync');
        admit(1);
        await nextTurn();
        admit(2);
        await nextTurn();
        expect(fs.count('fdatasyncSync') - before, sync).to.equal(sync === 'always' ? 2 : 0);
      }
    });

    it('on close, deletes what holds nothing, keeps what is not delivered, and removes its lock last', async () => {
      const dir = tempDir();
      const { spool, admit } = open(dir);
      admit(1);
      const delivered = admit(2)!;
      await nextTurn();
      spool.release([delivered], 'delivered');
      spool.close();
      expect(readdirSync(dir).filter((n) => n.endsWith('.lock'))).to.deep.equal([]);
      expect(all(dir)).to.deep.equal([json(1)]);
      const empty = tempDir();
      open(empty).spool.close();
      expect(readdirSync(empty)).to.deep.equal([]);
    });
  });

  describe('taking over the files of a process that is gone', () => {
    it('sends what it left, reports how many and from when, and deletes its files once delivered', async () => {
      const dir = tempDir();
      const dead = deadOwner(dir, [json(1), json(2), json(3)], { time: Date.parse('2026-03-01T10:00:00.000Z') });
      const { spool, resent, recoveries } = track(open(dir));
      await nextTurn();
      expect(recoveries).to.deep.equal([{ messages: 3, since: new Date('2026-03-01T10:00:00.000Z'), files: 1 }]);
      expect(resent.map((r) => r.json)).to.deep.equal([json(1), json(2), json(3)]);
      expect(existsSync(dead.path)).to.equal(false);
      expect(existsSync(dead.lock)).to.equal(false);
      spool.release(resent, 'delivered');
      await nextTurn();
      expect([...segments(dir).values()]).to.deep.equal([[]]);
    });

    it('takes over files left without a lock (a client that closed before delivering)', async () => {
      const dir = tempDir();
      const first = open(dir);
      first.admit(7);
      await nextTurn();
      first.spool.close();
      const { resent } = track(open(dir));
      await nextTurn();
      expect(resent.map((r) => r.json)).to.deep.equal([json(7)]);
    });

    it('leaves alone the files of a process that runs (and of another client of this process)', async () => {
      const dir = tempDir();
      const live = deadOwner(dir, [json(1)], { id: 'a11ce0000000' });
      writeFileSync(live.lock, JSON.stringify({ format: 1, pid: process.ppid, host: host.hostname, start: host.startOf(process.ppid) ?? null }));
      const sibling = track(open(dir));
      sibling.admit(2);
      await nextTurn();
      const { resent } = track(open(dir));
      await nextTurn();
      expect(resent).to.deep.equal([]);
      expect(existsSync(live.path)).to.equal(true);
      expect(all(dir).sort()).to.deep.equal([json(1), json(2)]);
    });

    it('takes over a lock naming a running process that started at another time (the pid was reused)', async function () {
      if (host.startOf(process.pid) === undefined) this.skip();
      const dir = tempDir();
      const reused = deadOwner(dir, [json(1)]);
      writeFileSync(reused.lock, JSON.stringify({ format: 1, pid: process.ppid, host: host.hostname, start: '1' }));
      const { resent } = track(open(dir));
      await nextTurn();
      expect(resent.map((r) => r.json)).to.deep.equal([json(1)]);
    });

    it("takes over a lock naming this process's own pid (a restarted container) that no client of it holds", async () => {
      const dir = tempDir();
      const restarted = deadOwner(dir, [json(1)]);
      writeFileSync(restarted.lock, JSON.stringify({ format: 1, pid: process.pid, host: host.hostname, start: null }));
      const { resent } = track(open(dir));
      await nextTurn();
      expect(resent.map((r) => r.json)).to.deep.equal([json(1)]);
    });

    it("takes over another host's lock only once its heartbeat is older than staleAfter", async () => {
      const dir = tempDir();
      const remote = deadOwner(dir, [json(1)]);
      writeFileSync(remote.lock, JSON.stringify({ format: 1, pid: process.pid, host: 'another-host', start: null }));
      const fresh = track(open(dir));
      await nextTurn();
      expect(fresh.resent).to.deep.equal([]);
      const old = new Date(Date.now() - 301_000);
      utimesSync(remote.lock, old, old);
      const later = track(open(dir));
      await nextTurn();
      expect(later.resent.map((r) => r.json)).to.deep.equal([json(1)]);
    });

    it('keeps looking: files of a process that dies later are taken over at the next scan, every 10 s', async () => {
      const dir = tempDir();
      const { clock, resent } = track(open(dir));
      await nextTurn();
      deadOwner(dir, [json(1)]);
      await clock.tick(9999);
      expect(resent).to.deep.equal([]);
      await clock.tick(1);
      expect(resent.map((r) => r.json)).to.deep.equal([json(1)]);
    });

    it('two clients looking at once take each file over exactly once', async () => {
      const dir = tempDir();
      for (let i = 0; i < 6; i++) deadOwner(dir, [json(i)], { id: `dead0000000${i}` });
      const a = track(open(dir));
      const b = track(open(dir));
      await nextTurn();
      const sent = [...a.resent, ...b.resent].map((r) => r.json).sort();
      expect(sent).to.deep.equal(Array.from({ length: 6 }, (_, i) => json(i)));
    });

    it('skips a record cut short and a damaged one, naming the file and offset, and sends the rest', async () => {
      const dir = tempDir();
      const dead = deadOwner(dir, [json(1), json(2), json(3), json(4)]);
      const bytes = readFileSync(dead.path);
      bytes[dead.offsets[1]! + 30] = bytes[dead.offsets[1]! + 30]! ^ 0x01;
      writeFileSync(dead.path, bytes.subarray(0, dead.offsets[3]! + 9));
      const { errors, resent } = track(open(dir));
      await nextTurn();
      expect(resent.map((r) => r.json)).to.deep.equal([json(1), json(3)]);
      expect(errors).to.have.length(2);
      for (const error of errors) expect(error).to.be.instanceOf(SpoolError).and.include({ code: 'ERR_SPOOL_CORRUPT' });
      const [corrupt, torn] = errors as SpoolError[];
      expect(corrupt!.offset).to.equal(dead.offsets[1]);
      expect(torn!.offset).to.equal(dead.offsets[3]);
      expect(corrupt!.file).to.match(/-\d{6}\.seg$/).and.not.equal(dead.path);
      expect(corrupt!.message).to.contain(corrupt!.file).and.contain(`offset ${dead.offsets[1]}`);
      // The torn tail was cut off: a later reader does not report it again.
      expect(statSync(corrupt!.file).size).to.equal(dead.offsets[3]);
    });

    it('refuses a file of a newer format version with ERR_SPOOL_VERSION and leaves it untouched', async () => {
      const dir = tempDir();
      const dead = deadOwner(dir, [json(1)]);
      const newer = Buffer.concat([fileHeader(FORMAT_VERSION + 1), readFileSync(dead.path).subarray(FILE_HEADER_BYTES)]);
      writeFileSync(dead.path, newer);
      const { errors, resent, clock } = track(open(dir, {}, { scanInterval: 1000 }));
      await nextTurn();
      await clock.tick(1000);
      expect(resent).to.deep.equal([]);
      expect(errors).to.have.length(1);
      expect(errors[0]).to.be.instanceOf(SpoolError).and.include({ code: 'ERR_SPOOL_VERSION', file: dead.path, offset: 0 });
      expect(errors[0]!.message).to.contain('version 2');
      expect(readFileSync(dead.path).equals(newer)).to.equal(true);
      expect(existsSync(dead.lock)).to.equal(true);
    });

    it('deletes a file whose header was cut short (created, then killed): it holds nothing', async () => {
      const dir = tempDir();
      const dead = deadOwner(dir, []);
      writeFileSync(dead.path, fileHeader().subarray(0, 5));
      const { errors, resent } = track(open(dir));
      await nextTurn();
      expect(errors).to.deep.equal([]);
      expect(resent).to.deep.equal([]);
      expect(existsSync(dead.path)).to.equal(false);
    });

    it('reports a lock that holds no lock (naming the file, not its content) and takes its files over at once', async () => {
      const dir = tempDir();
      const dead = deadOwner(dir, [json(1)]);
      writeFileSync(dead.lock, 'write-key=secret-not-a-lock\n');
      // A fresh file: by age alone it would hide the segment for staleAfter (5 minutes).
      const { errors, resent } = track(open(dir));
      await nextTurn();
      expect(resent.map((r) => r.json)).to.deep.equal([json(1)]);
      expect(errors).to.have.length(1);
      expect(errors[0]).to.be.instanceOf(SpoolError).and.include({ code: 'ERR_SPOOL_CORRUPT', file: dead.lock });
      expect(errors[0]!.message).to.contain(dead.lock).and.not.contain('secret');
      expect(existsSync(dead.lock)).to.equal(false);
    });

    it('leaves an empty lock (its owner between creating and writing it) until staleAfter', async () => {
      const dir = tempDir();
      const dead = deadOwner(dir, [json(1)]);
      writeFileSync(dead.lock, '');
      const { errors, resent } = track(open(dir));
      await nextTurn();
      expect(resent).to.deep.equal([]);
      expect(errors).to.deep.equal([]);
    });

    it('names a lock file this process can take over from a pid that runs nowhere', () => {
      expect(host.isRunning(DEAD_PID)).to.equal(false);
      expect(host.isRunning(process.pid)).to.equal(true);
    });
  });

  describe('faults (through the fs seam)', () => {
    for (const code of ['ENOSPC', 'EIO', 'EACCES']) {
      it(`${code} on a write: the calls of that turn are refused (ERR_SPOOL_WRITE), nothing of them kept; the next turn's write takes calls again`, async () => {
        const dir = tempDir();
        const { fs, admit, errors, written } = track(open(dir));
        await nextTurn();
        fs.fail('writeSync', code);
        admit(1);
        await nextTurn();
        admit(2);
        await nextTurn();
        expect(written).to.have.length(2);
        for (const failure of written) {
          expect(failure).to.be.instanceOf(SpoolError).and.include({ code: 'ERR_SPOOL_WRITE' });
          expect(failure!.file).to.match(/-000000\.seg$/);
          expect((failure!.cause as { code: string }).code).to.equal(code);
          expect(failure!.message).to.contain(code).and.contain('Refused');
        }
        // Each call heard of it through its own refusal: no report besides.
        expect(errors).to.deep.equal([]);
        fs.heal();
        admit(3);
        await nextTurn();
        expect(written[2]).to.equal(undefined);
        expect(all(dir)).to.deep.equal([json(3)]);
      });
    }

    it("with onWriteError: 'memory', the calls are kept (ERR_SPOOL_NOT_DURABLE) and written once the disk takes them, tried every second", async () => {
      const dir = tempDir();
      const { fs, admit, errors, written, clock } = track(open(dir, { onWriteError: 'memory' }));
      await nextTurn();
      fs.fail('writeSync', 'ENOSPC');
      admit(1);
      await nextTurn();
      const writes = fs.count('writeSync');
      admit(2);
      await nextTurn();
      // While the retry waits, a turn's calls are not tried on their own (the held ones would be encoded again each turn).
      expect(fs.count('writeSync')).to.equal(writes);
      expect(written.map((f) => f?.code)).to.deep.equal(['ERR_SPOOL_NOT_DURABLE', 'ERR_SPOOL_NOT_DURABLE']);
      expect(written[0]!.message).to.contain('ENOSPC').and.contain('memory');
      expect(errors).to.deep.equal([]);
      await clock.tick(1000);
      expect(all(dir)).to.deep.equal([]);
      fs.heal();
      await clock.tick(1000);
      expect(all(dir)).to.deep.equal([json(1), json(2)]);
    });

    it('a write cut short by a full disk is cut off the file again: what is written later reads back whole', async () => {
      const dir = tempDir();
      const { fs, admit, written } = track(open(dir));
      admit(1);
      await nextTurn();
      fs.fail('writeSync', 'ENOSPC', { times: 1, partial: 25 });
      admit(2);
      await nextTurn();
      admit(3);
      await nextTurn();
      expect(written.map((f) => f?.code)).to.deep.equal([undefined, 'ERR_SPOOL_WRITE', undefined]);
      const [file] = [...segments(dir).keys()];
      const scan = scanRecords(readFileSync(join(dir, file!)), crc32);
      expect(scan.damage).to.deep.equal([]);
      expect(scan.messages.map((m) => m.json)).to.deep.equal([json(1), json(3)]);
    });

    it('when the cut cannot be undone either, writes go on in a new file, and a reader skips the torn bytes', async () => {
      const dir = tempDir();
      const { spool, fs, admit, written } = open(dir);
      admit(1);
      await nextTurn();
      fs.fail('writeSync', 'EIO', { times: 1, partial: 25 });
      fs.fail('ftruncateSync', 'EIO', { times: 1 });
      admit(2);
      await nextTurn();
      admit(3);
      await nextTurn();
      expect(written.map((f) => f?.code)).to.deep.equal([undefined, 'ERR_SPOOL_WRITE', undefined]);
      expect([...segments(dir).values()]).to.deep.equal([[json(1)], [json(3)]]);
      spool.close();
      const reader = track(open(dir));
      await nextTurn();
      expect(reader.resent.map((r) => r.json).sort()).to.deep.equal([json(1), json(3)]);
      expect(reader.errors.map((e) => (e as SpoolError).offset)).to.have.length(1);
      expect(reader.errors[0]).to.include({ code: 'ERR_SPOOL_CORRUPT' });
    });

    it('a failed ack write is tried again: the record is not sent twice by the next client', async () => {
      const dir = tempDir();
      const { spool, fs, admit, clock } = open(dir);
      const records = [admit(1)!, admit(2)!];
      await nextTurn();
      fs.fail('writeSync', 'EIO', { times: 1 });
      spool.release([records[0]!], 'delivered');
      await nextTurn();
      expect(all(dir)).to.deep.equal([json(1), json(2)]);
      await clock.tick(1000);
      expect(all(dir)).to.deep.equal([json(2)]);
      spool.close();
    });

    it('a directory that cannot be created, or written, is a ConfigError naming spool.dir', () => {
      const cases: [Parameters<FaultyFs['fail']>[0], string][] = [
        ['mkdirSync', 'EACCES'],
        ['writeFileSync', 'EROFS'],
        ['openSync', 'EACCES'],
        ['writeSync', 'EIO'],
      ];
      for (const [call, code] of cases) {
        const dir = tempDir();
        const fs = new FaultyFs();
        fs.fail(call, code);
        const clock = new FakeClock();
        let thrown: unknown;
        try {
          Spool.open({ dir, maxBytes: 104_857_600, sync: 'none', onWriteError: 'refuse' }, { clock, report() {}, written() {}, resend() {}, recovered() {} }, { runtime: runtimeWith(fs) });
        } catch (error) {
          thrown = error;
        }
        expect(thrown, call).to.be.instanceOf(ConfigError).and.include({ field: 'spool.dir' });
        expect((thrown as Error).message).to.contain(code).and.contain(dir);
        // Nothing is left behind by a client that could not start.
        expect(readdirSync(dir).filter((n) => n.endsWith('.lock')), call).to.deep.equal([]);
      }
    });

    it('on a runtime without node:fs (no process.getBuiltinModule: Workers, Edge), `spool` is a ConfigError naming it', () => {
      const real = process.getBuiltinModule;
      let thrown: unknown;
      try {
        (process as { getBuiltinModule?: unknown }).getBuiltinModule = undefined;
        Spool.open({ dir: tempDir(), maxBytes: 104_857_600, sync: 'none', onWriteError: 'refuse' }, { clock: new FakeClock(), report() {}, written() {}, resend() {}, recovered() {} });
      } catch (error) {
        thrown = error;
      } finally {
        process.getBuiltinModule = real;
      }
      expect(thrown).to.be.instanceOf(ConfigError).and.include({ field: 'spool' });
      expect((thrown as Error).message).to.contain('node:fs');
    });

    it('a full disk at the start is no ConfigError: the client sends what is there, and writes its lock and files once the disk takes them', async () => {
      const dir = tempDir();
      deadOwner(dir, [json(1), json(2)]);
      const fs = new FaultyFs();
      // The lock is created, then its write fails: it must not stay behind empty.
      fs.fail('writeFileSync', 'ENOSPC', { partial: 0 });
      fs.fail('writeSync', 'ENOSPC');
      const written: (SpoolError | undefined)[] = [];
      const resent: SpoolRecord[] = [];
      const clock = new FakeClock();
      const spool = Spool.open(
        { dir, maxBytes: 104_857_600, sync: 'none', onWriteError: 'refuse' },
        { clock, report() {}, written: (f) => written.push(f), resend: (r) => resent.push(...r), recovered() {} },
        { runtime: runtimeWith(fs) },
      );
      opened.push(spool);
      await nextTurn();
      const locks = () => readdirSync(dir).filter((n) => n.endsWith('.lock'));
      // The dead owner's lock is gone with its files; this client could not write one.
      expect(locks()).to.deep.equal([]);
      expect(resent.map((r) => r.json)).to.deep.equal([json(1), json(2)]);
      // No lock yet: a call cannot be written, and is refused.
      spool.admit(json(3), Buffer.byteLength(json(3)), clock.now());
      await nextTurn();
      expect(written[0]).to.include({ code: 'ERR_SPOOL_WRITE' });
      // Delivering what it took over frees room.
      spool.release(resent, 'delivered');
      await nextTurn();
      expect(readdirSync(dir)).to.deep.equal([]);
      fs.heal();
      spool.admit(json(4), Buffer.byteLength(json(4)), clock.now());
      await nextTurn();
      expect(written[1]).to.equal(undefined);
      expect(locks()).to.have.length(1);
      expect(all(dir)).to.deep.equal([json(4)]);
    });

    it('puts back its lock when it was removed by hand, so that no other client takes its files', async () => {
      const dir = tempDir();
      const { clock, admit } = track(open(dir, {}, { scanInterval: 1000 }));
      admit(1);
      await nextTurn();
      const [lock] = readdirSync(dir).filter((n) => n.endsWith('.lock'));
      const { rmSync } = await import('node:fs');
      rmSync(join(dir, lock!));
      await clock.tick(1000);
      expect(existsSync(join(dir, lock!))).to.equal(true);
    });
  });
});
