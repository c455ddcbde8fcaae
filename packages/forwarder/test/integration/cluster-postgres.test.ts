import { describe, it, before, afterEach } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { systemClock } from '../../../eventrelay/src/clock';
import type { Clock } from '../../../eventrelay/src/clock';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { Operations } from '../../src/observability/operations';
import type { LiveRelay } from '../../src/observability/relay';
import { PostgresListener } from '../../src/store/postgres/postgres-listen';
import { basic, post, takeSseEvents, useReceiver, useTwoForSuite, waitFor } from './helpers';
import type { SseEvent } from './helpers';
import { listenConnections, usePostgres } from '../../../../test/helpers/postgres';

const ADMIN = 'cluster-admin-token';
const auth = { Authorization: `Bearer ${ADMIN}` };

/** A live stream read in the background: its events so far, in order. */
interface OpenStream {
  readonly events: SseEvent[];
  close(): Promise<void>;
}

async function openStream(url: string): Promise<OpenStream> {
  const control = new AbortController();
  const response = await fetch(`${url}/admin/stream`, { headers: auth, signal: control.signal });
  expect(response.status).to.equal(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  const reading = (async () => {
    const buffer = { text: '' };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer.text += decoder.decode(value, { stream: true });
        takeSseEvents(buffer, events);
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    events,
    close: async () => {
      control.abort();
      await reading;
    },
  };
}

/** The forwarder's live-stream relay (an internal, for counting what it sent). */
function relayOf(forwarder: Forwarder): LiveRelay {
  return (forwarder as unknown as { parts: { lifecycle: { ops: Operations } } }).parts.lifecycle.ops.cluster!.relay;
}

async function overview(url: string): Promise<any> {
  const response = await fetch(`${url}/admin/overview`, { headers: auth });
  expect(response.status).to.equal(200);
  return response.json();
}

async function ownStats(url: string): Promise<any> {
  return (await fetch(`${url}/stats`)).json();
}

const track = (messageId: string, properties: object = {}) => ({ type: 'track', userId: 'u-cluster', event: 'Clustered', messageId, properties });
const of = (events: readonly SseEvent[], event: string, messageId: string) => events.filter((e) => e.event === event && e.data.messageId === messageId);

describe('one picture of the cluster: two forwarders on one PostgreSQL database', function () {
  this.timeout(60_000);

  describe('the live stream', () => {
    const db = usePostgres();
    const receiver = useReceiver();
    const two = useTwoForSuite(() => ({
      adminToken: ADMIN,
      storage: { type: 'postgres', url: db.url, poolSize: 3 },
      sources: [{ name: 'web', writeKey: 'key-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/web` }] } } }],
    }));
    const streams: OpenStream[] = [];

    afterEach(async () => {
      for (const s of streams.splice(0)) await s.close();
    });

    const send = (url: string, messages: object[]) => post(`${url}/v1/batch`, { batch: messages }, { Authorization: basic('key-web') });
    const stream = async (url: string) => {
      const s = await openStream(url);
      streams.push(s);
      return s;
    };
    const delivered = (messageId: string) => receiver.delivered.some((r) => r.json.messageId === messageId);
    const attemptsSeenBy = async (url: string) => ((await ownStats(url)).endpoints as { attempts: number }[]).reduce((n, e) => n + e.attempts, 0);

    it('relays nothing while no instance has a subscriber, and stops when the last one leaves', async () => {
      expect((await send(two.urlA, [track('quiet-a')])).status).to.equal(200);
      expect((await send(two.urlB, [track('quiet-b')])).status).to.equal(200);
      await waitFor(() => delivered('quiet-a') && delivered('quiet-b'), 'both delivered');
      await waitFor(async () => (await attemptsSeenBy(two.urlA)) + (await attemptsSeenBy(two.urlB)) === 2, 'both attempts counted');
      expect(relayOf(two.a).counts.relayed).to.equal(0);
      expect(relayOf(two.b).counts.relayed).to.equal(0);
      expect(relayOf(two.a).wanted).to.equal(false);

      const onB = await stream(two.urlB);
      await waitFor(() => relayOf(two.a).wanted, 'A to hear that B has a subscriber');
      const attemptsOfA = await attemptsSeenBy(two.urlA);
      await send(two.urlA, [track('watched-a')]);
      await waitFor(() => of(onB.events, 'attempt', 'watched-a').length === 1, 'the attempt on B’s stream');
      // A relayed the call and, if A made the attempt (it usually does: it accepted the call), the attempt.
      const relayedByA = 1 + (await attemptsSeenBy(two.urlA)) - attemptsOfA;
      // A counts them once its statement returns, a moment after B heard them.
      await waitFor(() => relayOf(two.a).counts.relayed === relayedByA, 'A to count what it relayed');
      // B relays nothing: nobody else watches.
      expect(relayOf(two.b).counts.relayed).to.equal(0);

      await onB.close();
      streams.splice(0);
      await waitFor(() => !relayOf(two.a).wanted, 'A to hear that B has no subscriber left');
      const attempts = (await attemptsSeenBy(two.urlA)) + (await attemptsSeenBy(two.urlB));
      await send(two.urlA, [track('unwatched-a')]);
      await waitFor(() => delivered('unwatched-a'), 'delivered');
      await waitFor(async () => (await attemptsSeenBy(two.urlA)) + (await attemptsSeenBy(two.urlB)) === attempts + 1, 'its attempt counted');
      expect(relayOf(two.a).counts.relayed).to.equal(relayedByA);
      expect(relayOf(two.b).counts.relayed).to.equal(0);
    });

    it('shows a subscriber on B the calls accepted at A and at B and their attempts, each once', async () => {
      const onA = await stream(two.urlA);
      const onB = await stream(two.urlB);
      // Both relay now (each has a subscriber), so each could hear its own events come back.
      await waitFor(() => relayOf(two.a).wanted && relayOf(two.b).wanted, 'both instances to relay');
      await send(two.urlA, [track('from-a', { plan: 'pro' })]);
      await send(two.urlB, [track('from-b')]);
      await waitFor(
        () => ['from-a', 'from-b'].every((id) => of(onB.events, 'accepted', id).length > 0 && of(onB.events, 'attempt', id).length > 0),
        'both calls and their attempts on B’s stream',
      );
      // Markers: notifications arrive in commit order, and each instance relays one statement at a
      // time, so once each marker is seen, every earlier event (or copy) has arrived too.
      await send(two.urlA, [track('marker-a')]);
      await send(two.urlB, [track('marker-b')]);
      await waitFor(() => of(onB.events, 'attempt', 'marker-a').length > 0 && of(onA.events, 'attempt', 'marker-b').length > 0, 'the markers');
      for (const id of ['from-a', 'from-b', 'marker-a', 'marker-b']) {
        expect(of(onB.events, 'accepted', id), `accepted ${id}`).to.have.length(1);
        expect(of(onB.events, 'attempt', id), `attempt ${id}`).to.have.length(1);
        expect(of(onA.events, 'accepted', id), `accepted ${id} on A`).to.have.length(1);
      }
      const accepted = of(onB.events, 'accepted', 'from-a')[0]!.data;
      expect(accepted).to.include({ source: 'web', type: 'track', userId: 'u-cluster', state: 'pending' });
      expect(accepted).not.to.have.property('bodyOmitted');
      expect(JSON.parse(accepted.body)).to.deep.include({ event: 'Clustered', properties: { plan: 'pro' } });
      expect(of(onB.events, 'attempt', 'from-a')[0]!.data).to.include({ outcome: 'delivered', attempt: 1 });
      // At least the two calls accepted at A (their attempts too, when A made them).
      expect(relayOf(two.b).counts.received).to.be.at.least(2);
    });

    it('relays an accepted call too large for a notification without its body, flagged; the instance that accepted it shows it whole', async () => {
      const onA = await stream(two.urlA);
      const onB = await stream(two.urlB);
      await waitFor(() => relayOf(two.a).wanted, 'A to relay');
      const omittedBefore = relayOf(two.a).counts.omitted;
      await send(two.urlA, [track('large-a', { blob: 'é'.repeat(6000) })]);
      await waitFor(() => of(onB.events, 'attempt', 'large-a').length > 0, 'the attempt on B’s stream');
      const onBAccepted = of(onB.events, 'accepted', 'large-a');
      expect(onBAccepted).to.have.length(1);
      expect(onBAccepted[0]!.data).to.include({ source: 'web', messageId: 'large-a', state: 'pending', body: null, bodyOmitted: true });
      const onAAccepted = of(onA.events, 'accepted', 'large-a');
      expect(onAAccepted).to.have.length(1);
      expect(onAAccepted[0]!.data).not.to.have.property('bodyOmitted');
      expect(JSON.parse(onAAccepted[0]!.data.body).properties.blob).to.equal('é'.repeat(6000));
      expect(relayOf(two.a).counts.omitted).to.equal(omittedBefore + 1);
    });

    it('an instance that starts while another has a subscriber relays to it (it missed the notification; the row says so)', async () => {
      const onB = await stream(two.urlB);
      await waitFor(() => relayOf(two.a).wanted, 'A to relay');
      const c = createForwarder({
        adminToken: ADMIN,
        storage: { type: 'postgres', url: db.url, poolSize: 2 },
        sources: [{ name: 'web', writeKey: 'key-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/web` }] } } }],
      });
      try {
        const { url: urlC } = await c.listen({ port: 0 });
        await waitFor(() => relayOf(c).wanted, 'C to learn of B’s subscriber from its row');
        await send(urlC, [track('from-c')]);
        const wantedAtSend = relayOf(c).wanted;
        await waitFor(() => of(onB.events, 'attempt', 'from-c').length === 1, 'C’s call on B’s stream');
        // What the relays did, should the accepted event be missing.
        const seen = JSON.stringify({ wantedAtSend, c: relayOf(c).counts, b: relayOf(two.b).counts, events: onB.events.map((e) => e.event) });
        expect(of(onB.events, 'accepted', 'from-c'), seen).to.have.length(1);
      } finally {
        await c.close();
      }
    });

    it('an event relayed while the instance’s LISTEN connection is still being opened waits for it (it was dropped)', async () => {
      const newClient = () => new pg.Client({ connectionString: db.url });
      const hearing = new PostgresListener(newClient, (text) => text);
      const starting = new PostgresListener(newClient, (text) => text);
      const heard: string[] = [];
      try {
        await hearing.listen('eventrelay_test_early', (payload) => heard.push(payload)).ready;
        // As when an instance starts: its connection opens for a channel it follows, and an event
        // goes out before that connection is open (a relay wanted from the start, as the row said).
        starting.listen('eventrelay_test_other', () => {});
        await starting.notify('eventrelay_test_early', ['early']);
        await waitFor(() => heard.includes('early'), 'the event sent before the connection was open');
      } finally {
        hearing.close();
        starting.close();
      }
    });

    it('keeps one LISTEN connection per instance, and relays again after it was lost', async () => {
      const onB = await stream(two.urlB);
      await waitFor(() => relayOf(two.a).wanted, 'A to relay');
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        const listeners = () => listenConnections(admin);
        // One each for A and B (an instance that just closed may linger a moment).
        await waitFor(async () => (await listeners()).length === 2, 'one LISTEN connection per instance');
        for (const { pid } of await listeners()) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        await waitFor(async () => (await listeners()).length === 2, 'both instances to LISTEN again', 15_000);
      } finally {
        await admin.end();
      }
      // A call whose events were relayed while a connection was down is not seen: send until one is.
      let n = 0;
      await waitFor(async () => {
        await send(two.urlA, [track(`after-cut-${++n}`)]);
        return onB.events.some((e) => e.event === 'attempt' && String(e.data.messageId).startsWith('after-cut-'));
      }, 'an event from A on B’s stream again', 15_000);
    });
  });

  describe('the overview', () => {
    const db = usePostgres();
    const receiver = useReceiver();
    before(() => receiver.failFirst('/down', 1_000_000, 500));
    /** B's clock: the real one, moved on by the test. */
    let offset = 0;
    const clockB: Clock = { ...systemClock, now: () => Date.now() + offset };
    const two = useTwoForSuite(() => ({
      adminToken: ADMIN,
      storage: { type: 'postgres', url: db.url, poolSize: 3 },
      // A short retry window: a receiver that keeps answering 500 makes a failed delivery in well under a second.
      delivery: { minRetryDelay: 10, maxRetryDelay: 40, retryWindow: 150 },
      sources: [
        { name: 'web', writeKey: 'key-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/web` }] } } },
        { name: 'down', writeKey: 'key-down', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/down` }] } } },
      ],
    }), { clock: clockB });

    const send = (url: string, key: string, ids: string[]) => post(`${url}/v1/batch`, { batch: ids.map((id) => track(id)) }, { Authorization: basic(key) });
    const entry = (o: any, source: string) => o.stats.endpoints.find((e: { source: string }) => e.source === source);
    const sum = (o: any, field: 'accepted' | 'delivered' | 'failed') => (o.chart as Record<string, number>[]).reduce((n, p) => n + p[field]!, 0);

    it('sums both instances’ endpoint health and chart; /stats stays each instance’s own', async () => {
      expect((await send(two.urlA, 'key-web', ['w-a1', 'w-a2', 'w-a3'])).status).to.equal(200);
      expect((await send(two.urlB, 'key-web', ['w-b1', 'w-b2'])).status).to.equal(200);
      expect((await send(two.urlA, 'key-down', ['d-a1'])).status).to.equal(200);
      expect((await send(two.urlB, 'key-down', ['d-b1'])).status).to.equal(200);
      await waitFor(async () => {
        const stats = await ownStats(two.urlB);
        return stats.delivered === 5 && stats.failed === 2;
      }, 'five delivered and two failed');

      let o: any;
      await waitFor(async () => {
        o = await overview(two.urlB);
        return entry(o, 'web')?.attempts === 5 && sum(o, 'accepted') === 7 && sum(o, 'delivered') === 5 && sum(o, 'failed') === 2;
      }, 'B’s overview to include A’s view');
      expect(o.instances).to.equal(2);
      const [ownA, ownB] = await Promise.all([ownStats(two.urlA), ownStats(two.urlB)]);
      const own = (stats: any, source: string) => entry({ stats }, source) ?? { attempts: 0, consecutiveFailures: 0 };
      // Each instance's /stats counts its own requests; the overview, both.
      expect(own(ownA, 'web').attempts + own(ownB, 'web').attempts).to.equal(5);
      expect(entry(o, 'web')).to.include({ url: `${receiver.url}/web`, lastStatus: 200, consecutiveFailures: 0, successRate: 1 });
      const down = entry(o, 'down');
      const downAttempts = own(ownA, 'down').attempts + own(ownB, 'down').attempts;
      expect(down.attempts).to.equal(downAttempts);
      expect(down).to.include({ lastStatus: 500, successRate: 0 });
      // No 2xx anywhere: every failed request of both is in the run.
      expect(down.consecutiveFailures).to.equal(downAttempts);
      expect(own(ownA, 'down').consecutiveFailures + own(ownB, 'down').consecutiveFailures).to.equal(downAttempts);
      // The chart's counts over both instances are the store's totals (every call within the hour).
      expect(sum(o, 'accepted')).to.equal(ownB.accepted);
      expect(sum(o, 'delivered')).to.equal(ownB.delivered);
      // A's overview is the same picture, once B's view has its last requests (B writes within a second).
      let oA: any;
      await waitFor(async () => {
        oA = await overview(two.urlA);
        return entry(oA, 'web').attempts === 5 && entry(oA, 'down').attempts === downAttempts;
      }, 'A’s overview to include B’s view');
      expect([oA.instances, sum(oA, 'accepted'), sum(oA, 'delivered'), sum(oA, 'failed')]).to.deep.equal([2, 7, 5, 2]);
    });

    it('keeps a stopped instance in the picture for its hour, then leaves it out and removes its view', async () => {
      const ownerA = two.a.instanceId;
      await two.a.close();
      const o = await overview(two.urlB);
      expect(o.instances).to.equal(2);
      expect(entry(o, 'web').attempts).to.equal(5);
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        const rows = async () =>
          (await admin.query('SELECT (SELECT count(*)::int FROM instance_views WHERE owner = $1) AS v, (SELECT count(*)::int FROM instance_minutes WHERE owner = $1) AS m', [ownerA]))
            .rows[0];
        expect((await rows()).v).to.equal(1);
        expect((await rows()).m).to.be.at.least(1);
        // An hour and a minute later on B's clock: A wrote nothing since.
        offset = 61 * 60_000;
        const later = await overview(two.urlB);
        expect(later.instances).to.equal(1);
        expect(sum(later, 'accepted')).to.equal(0);
        await waitFor(async () => {
          const r = await rows();
          return r.v === 0 && r.m === 0;
        }, 'A’s view to be removed');
      } finally {
        await admin.end();
      }
    });
  });
});
