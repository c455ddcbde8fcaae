import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { diagnose, kill, startClient, stop, useClientProcesses, waitFor } from './processes';
import { useTempDirs } from '../../../../../test/helpers/temp-dir';

describe('processes sharing one spool dir (child processes on the built package)', function () {
  this.timeout(60_000);
  const tempDir = useTempDirs('eventrelay-spool-shared-');
  const suite = useClientProcesses();

  it('each writes its own files; the files of one killed are delivered once, by exactly one of the others', async () => {
    const dir = tempDir();
    suite.sink.up = false;
    const start = (name: string, count: number) => {
      const client = startClient({ URL: suite.sink.sink.url, DIR: dir, PREFIX: name, KEY: `key-${name}`, MODE: 'burst', COUNT: String(count), SCAN: '100' });
      suite.children.push(client);
      return client;
    };
    const [killed, b, c] = [start('killed', 3000), start('b', 500), start('c', 500)];
    await waitFor(() => [killed, b, c].every((client) => client.finished), 'every call made');
    // Each process has a lock and segments of its own.
    const owners = new Set(readdirSync(dir).map((name) => name.slice(0, 12)));
    expect(owners.size).to.equal(3);
    await kill(killed);
    suite.sink.retire('key-killed');
    expect(killed.accepted.size).to.equal(3000);

    suite.sink.up = true;
    const everyone = [...killed.accepted, ...b.accepted, ...c.accepted];
    await waitFor(() => everyone.every((id) => suite.sink.count(id) > 0), 'every accepted call at the sink', 40_000).catch((error: Error) => {
      throw new Error(`${error.message}: ${diagnose(suite.sink, everyone, dir, b)} / ${diagnose(suite.sink, [], dir, c)}`);
    });
    // Exactly one survivor took the killed process's files over, whole.
    expect([...b.recovered, ...c.recovered]).to.deep.equal([3000]);
    await Promise.all([stop(b), stop(c)]);
    expect(everyone.filter((id) => suite.sink.count(id) !== 1)).to.deep.equal([]);
    expect(suite.sink.arrivals).to.have.length(4000);
    // The killed process's messages went out under the write key of the survivor that took them.
    const takers = new Set(suite.sink.arrivals.flatMap((id, i) => (id.startsWith('killed-') ? [suite.sink.senders[i]] : [])));
    expect([...takers]).to.satisfy((keys: string[]) => keys.length === 1 && ['key-b', 'key-c'].includes(keys[0]!));
    expect(readdirSync(dir)).to.deep.equal([]);
  });
});
