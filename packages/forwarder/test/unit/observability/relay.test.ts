import { describe, it } from 'mocha';
import { expect } from 'chai';
import { LiveRelay, MAX_PAYLOAD_BYTES } from '../../../src/observability/relay';
import { waitFor } from '../../../../../test/helpers/wait';

/** A transport that records each statement's payloads; `hold` keeps every send in flight until `release()`. */
function transport(hold = false) {
  const sent: string[][] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  return {
    sent,
    release: () => release(),
    relay: async (payloads: readonly string[]) => {
      sent.push([...payloads]);
      if (hold) await gate;
    },
  };
}

const accepted = (messageId: string, body: string | null) => ({ source: 'web', messageId, type: 'track', userId: 'u', receivedAt: '2026-01-01T00:00:00.000Z', state: 'pending', body });

function sendAccepted(relay: LiveRelay, data: object): void {
  relay.send('accepted', 'web', data, JSON.stringify(data));
}

describe('LiveRelay (the live stream between instances)', () => {
  it('is wanted while another instance announced a subscriber, until its time runs out or it says it has none', () => {
    let now = 1000;
    const relay = new LiveRelay('me', transport(), () => now);
    expect(relay.wanted).to.equal(false);
    relay.watcher('me', 5000);
    expect(relay.wanted, 'its own announcement').to.equal(false);
    relay.watcher('other', 4000);
    expect(relay.wanted).to.equal(true);
    // An older reading does not shorten it.
    relay.watcher('other', 2000);
    now = 3000;
    expect(relay.wanted).to.equal(true);
    now = 4000;
    expect(relay.wanted).to.equal(false);
    relay.watcher('other', 9000);
    relay.watcher('other', 0);
    expect(relay.wanted).to.equal(false);
  });

  it('frames events so that only the other instances take them, unchanged, and batches a turn’s events in one statement', async () => {
    const t = transport();
    const mine = new LiveRelay('a', t, () => 0);
    const theirs = new LiveRelay('b', transport(), () => 0);
    const data = accepted('m1', '{"type":"track"}');
    sendAccepted(mine, data);
    mine.send('attempt', 'web', { messageId: 'm1', outcome: 'delivered' }, '{"messageId":"m1","outcome":"delivered"}');
    await waitFor(() => mine.counts.relayed === 2, 'the send');
    expect(t.sent).to.have.length(1);
    const [first, second] = t.sent[0]!;
    expect(mine.receive(first!), 'its own event').to.equal(undefined);
    expect(theirs.receive(first!)).to.deep.equal({ event: 'accepted', source: 'web', json: JSON.stringify(data) });
    expect(theirs.receive(second!)).to.deep.include({ event: 'attempt' });
    // Two equal events stay two notifications (PostgreSQL folds equal payloads of one transaction).
    expect(first).not.to.equal(second);
    for (const bad of ['', 'no header', '["a",1,"accepted"]\n{}', '["a",1,"hacked","web"]\n{}', '["a",1,"accepted","web"]\n{}\n\nevent: x']) {
      expect(theirs.receive(bad), bad).to.equal(undefined);
    }
    expect(theirs.counts.received).to.equal(2);
  });

  it('sends an accepted call too large for a notification without its body, and drops what does not fit even so', async () => {
    const t = transport();
    const relay = new LiveRelay('a', t, () => 0);
    // 3000 characters, 6000 bytes in UTF-8: measured in bytes.
    sendAccepted(relay, accepted('small', 'é'.repeat(3000)));
    sendAccepted(relay, accepted('large', 'é'.repeat(4000)));
    sendAccepted(relay, { ...accepted('huge-id', null), userId: 'u'.repeat(MAX_PAYLOAD_BYTES) });
    relay.send('attempt', 'web', {}, JSON.stringify({ reason: 'x'.repeat(MAX_PAYLOAD_BYTES) }));
    await waitFor(() => relay.counts.relayed === 2, 'the send');
    const other = new LiveRelay('b', transport(), () => 0);
    const [small, large] = t.sent.flat().map((p) => JSON.parse(other.receive(p)!.json));
    expect(small.body).to.equal('é'.repeat(3000));
    expect(small).not.to.have.property('bodyOmitted');
    expect(large).to.include({ messageId: 'large', body: null, bodyOmitted: true });
    for (const p of t.sent.flat()) expect(Buffer.byteLength(p)).to.be.at.most(MAX_PAYLOAD_BYTES);
    expect(relay.counts).to.deep.include({ omitted: 1, dropped: 2 });
  });

  it('keeps at most 1000 events waiting while a send is in flight, and counts what it drops', async () => {
    const t = transport(true);
    const relay = new LiveRelay('a', t, () => 0);
    for (let i = 0; i < 1500; i++) relay.send('refused', 'web', {}, `{"n":${i}}`);
    expect(relay.counts.dropped).to.equal(500);
    // The first statement takes 200 of them; the rest wait for it.
    await waitFor(() => t.sent.length === 1, 'the first statement');
    expect(t.sent[0]).to.have.length(200);
    for (let i = 0; i < 300; i++) relay.send('refused', 'web', {}, `{"m":${i}}`);
    expect(relay.counts.dropped).to.equal(500 + 100);
    t.release();
    // The 200 in flight, then the 1000 that waited.
    await waitFor(() => relay.counts.relayed === 1200, 'the backlog to be sent');
    expect(t.sent.map((s) => s.length)).to.deep.equal([200, 200, 200, 200, 200, 200]);
    await relay.close();
  });

  it('bounds the memory of the events waiting, and drops them when a send fails', async () => {
    const t = transport(true);
    const relay = new LiveRelay('a', t, () => 0);
    // About 14 KB each in memory: some 150 fit in 2 MiB.
    const big = JSON.stringify({ text: 'x'.repeat(7000) });
    for (let i = 0; i < 400; i++) relay.send('refused', 'web', {}, big);
    expect(relay.counts.dropped).to.be.within(240, 260);
    t.release();
    await waitFor(() => relay.counts.relayed + relay.counts.dropped === 400, 'the backlog');

    const failing = new LiveRelay('a', { relay: () => Promise.reject(new Error('connection lost')) }, () => 0);
    failing.send('refused', 'web', {}, '{}');
    await waitFor(() => failing.counts.dropped === 1, 'the failed send counted');
    expect(failing.counts.relayed).to.equal(0);
  });
});
