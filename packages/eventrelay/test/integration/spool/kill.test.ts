import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { diagnose, kill, startClient, stop, useClientProcesses, waitFor } from './processes';
import { seeded } from '../../../../../test/helpers/seeded.mjs';
import { useTempDirs } from '../../../../../test/helpers/temp-dir';

describe('the spool across SIGKILL (child processes on the built package)', function () {
  this.timeout(60_000);
  const tempDir = useTempDirs('eventrelay-spool-kill-');
  const suite = useClientProcesses();

  it('a later process on the same dir delivers every call accepted before each kill; duplicates come only from batches in flight', async () => {
    const seed = Number(process.env.SPOOL_TEST_SEED ?? Date.now() % 1_000_000);
    const random = seeded(seed);
    const why = `(replay with SPOOL_TEST_SEED=${seed})`;
    const dir = tempDir();
    const accepted = new Set<string>();
    /** Per id reported delivered: how many arrivals the sink had counted when its process was killed. */
    const deliveredBy = new Map<string, number>();
    const rounds = 8;
    for (let round = 0; round < rounds; round++) {
      // Odd rounds: the sink is down for the whole life of the process. Even rounds: it is up, so
      // batches are delivered, acked, and some are in flight when the kill comes.
      suite.sink.up = round % 2 === 0;
      const burst = round % 4 < 2;
      const count = burst ? 4000 : 1500;
      const client = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: `r${round}`, KEY: `key-${round}`, MODE: burst ? 'burst' : 'paced', COUNT: String(count) });
      suite.children.push(client);
      // Killed at a random point: after a random share of the calls were accepted, plus up to 20 ms.
      const threshold = 1 + Math.floor(random() * count * 0.9);
      await waitFor(() => client.accepted.size >= threshold || client.finished, `round ${round}: ${threshold} calls accepted ${why}`, 30_000);
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 20)));
      await kill(client);
      suite.sink.retire(`key-${round}`);
      for (const id of client.accepted) accepted.add(id);
      for (const id of client.delivered) deliveredBy.set(id, suite.sink.arrivals.length);
      expect(client.accepted.size, `round ${round} made progress ${why}`).to.be.above(0);
    }

    suite.sink.up = true;
    const last = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: 'last', KEY: 'key-last', MODE: 'idle' });
    suite.children.push(last);
    await waitFor(() => [...accepted].every((id) => suite.sink.count(id) > 0), `every accepted call at the sink ${why}`, 40_000).catch((error: Error) => {
      throw new Error(`${error.message}: ${diagnose(suite.sink, accepted, dir, last)}`);
    });
    await stop(last);

    // Nothing but what the children made arrived.
    expect(suite.sink.arrivals.filter((id) => !/^r\d-\d+$/.test(id)), why).to.deep.equal([]);
    // A call reported delivered was acked on disk before its process died: it never arrives again.
    const again = [...deliveredBy].filter(([id, before]) => suite.sink.arrivals.slice(before).includes(id));
    expect(again, `sent again after being acked ${why}`).to.deep.equal([]);
    // A process never sends a message twice: a repeat comes from a later process, which found it
    // on disk because the kill came before its batch's answer was acked.
    const senders = new Map<string, string[]>();
    suite.sink.arrivals.forEach((id, i) => senders.set(id, [...(senders.get(id) ?? []), suite.sink.senders[i]!]));
    const twiceByOne = [...senders].filter(([, by]) => new Set(by).size !== by.length);
    expect(twiceByOne, `sent twice by one process ${why}`).to.deep.equal([]);
    // The last process delivered everything and left nothing behind.
    expect(readdirSync(dir), why).to.deep.equal([]);
  });

  for (const ending of ['crash', 'exit'] as const) {
    it(`a ${ending === 'crash' ? 'crash (an uncaught exception)' : 'process.exit()'} in a later turn loses no accepted call`, async () => {
      const dir = tempDir();
      suite.sink.up = false;
      const client = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: ending, KEY: `key-${ending}`, MODE: ending, COUNT: '300' });
      suite.children.push(client);
      const { code } = await client.exited;
      suite.sink.retire(`key-${ending}`);
      expect(code).to.equal(ending === 'crash' ? 1 : 3);
      await waitFor(() => client.accepted.size === 300, 'the accepted calls reported');
      suite.sink.up = true;
      const last = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: 'last', KEY: 'key-last', MODE: 'idle' });
      suite.children.push(last);
      await waitFor(() => [...client.accepted].every((id) => suite.sink.count(id) > 0), 'every accepted call at the sink', 30_000).catch((error: Error) => {
        throw new Error(`${error.message}: ${diagnose(suite.sink, client.accepted, dir, last)}`);
      });
      await stop(last);
      expect([...client.accepted].filter((id) => suite.sink.count(id) !== 1)).to.deep.equal([]);
    });
  }

  for (const ending of ['exit-now', 'crash-now'] as const) {
    it(`${ending === 'exit-now' ? 'process.exit()' : 'a crash'} in the very turn of the calls loses none of them: the exit hook writes them`, async () => {
      const dir = tempDir();
      suite.sink.up = false;
      const client = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: ending, KEY: `key-${ending}`, MODE: ending, COUNT: '200' });
      suite.children.push(client);
      expect((await client.exited).code).to.equal(ending === 'exit-now' ? 3 : 1);
      suite.sink.retire(`key-${ending}`);
      await waitFor(() => client.accepted.size === 200, 'the accepted calls reported');
      // It closed its spool on exit: no lock left, its records waiting for the next client.
      expect(readdirSync(dir).filter((name) => name.endsWith('.lock'))).to.deep.equal([]);
      suite.sink.up = true;
      const last = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: 'last', KEY: 'key-last', MODE: 'idle' });
      suite.children.push(last);
      await waitFor(() => [...client.accepted].every((id) => suite.sink.count(id) > 0), 'every accepted call at the sink', 30_000).catch((error: Error) => {
        throw new Error(`${error.message}: ${diagnose(suite.sink, client.accepted, dir, last)}`);
      });
      await stop(last);
      expect([...client.accepted].filter((id) => suite.sink.count(id) !== 1)).to.deep.equal([]);
    });
  }

  it('a script that tracks and ends delivers, then leaves the directory empty', async () => {
    const dir = tempDir();
    suite.sink.up = true;
    const client = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: 'script', KEY: 'key-script', MODE: 'script', COUNT: '50' });
    suite.children.push(client);
    expect((await client.exited).code).to.equal(0);
    expect([...client.accepted].filter((id) => suite.sink.count(id) !== 1)).to.deep.equal([]);
    expect(client.accepted.size).to.equal(50);
    expect(readdirSync(dir)).to.deep.equal([]);
  });

  it('with sync: always, the same: a kill loses no accepted call', async () => {
    const dir = tempDir();
    suite.sink.up = false;
    const client = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: 'sync', KEY: 'key-sync', MODE: 'burst', COUNT: '3000', SYNC: 'always' });
    suite.children.push(client);
    await waitFor(() => client.accepted.size >= 1500, 'half the calls accepted', 30_000);
    await kill(client);
    suite.sink.retire('key-sync');
    suite.sink.up = true;
    const last = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: 'last', MODE: 'idle', SYNC: 'always' });
    suite.children.push(last);
    await waitFor(() => [...client.accepted].every((id) => suite.sink.count(id) > 0), 'every accepted call at the sink', 30_000).catch((error: Error) => {
      throw new Error(`${error.message}: ${diagnose(suite.sink, client.accepted, dir, last)}`);
    });
    expect(last.recovered.reduce((a, b) => a + b, 0)).to.be.at.least(client.accepted.size);
    await stop(last);
    expect([...client.accepted].filter((id) => suite.sink.count(id) !== 1)).to.deep.equal([]);
  });
});
