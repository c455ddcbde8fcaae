import { describe, it } from 'mocha';
import { expect } from 'chai';
import { HealthTracker, mergeHealth, windowStart } from '../../../src/observability/health';
import type { HealthView } from '../../../src/observability/health';
import { mergeTimeline, Timeline } from '../../../src/observability/timeline';
import {
  decodeHealthMinute,
  decodeLatest,
  decodeTimelineMinute,
  encodeHealthMinute,
  encodeLatest,
  encodeTimelineMinute,
} from '../../../src/observability/shared-views';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const URL_A = 'http://a.test/in';

/** A tracker's view as another instance reads it: through the text form it is stored in. */
function shared(tracker: HealthTracker, now: number): HealthView {
  const from = windowStart(now);
  const minutes = [];
  for (let m = from; m <= Math.floor(now / 60_000); m++) {
    const text = encodeHealthMinute(tracker.minutes(m, m));
    minutes.push(...decodeHealthMinute(text, m)!);
  }
  return { latest: decodeLatest(encodeLatest(tracker.latest()))!, minutes };
}

describe('mergeHealth (several instances, one view)', () => {
  it('sums attempts and histograms per URL: quantiles and success rate are those of every request together', () => {
    const a = new HealthTracker();
    const b = new HealthTracker();
    const all = new HealthTracker();
    // Durations spread over many buckets; A has the fast ones, B the slow ones and the failures.
    for (let i = 1; i <= 99; i++) {
      const at = T0 + i * 1000;
      const ok = i % 7 !== 0;
      const [tracker, ms] = i <= 50 ? [a, i] : [b, i * 40];
      tracker.record('web', URL_A, at, ok, ok ? 200 : 503, null, ms);
      all.record('web', URL_A, at, ok, ok ? 200 : 503, null, ms);
    }
    const now = T0 + 200_000;
    const [merged] = mergeHealth([shared(a, now), shared(b, now)], now);
    const [single] = all.snapshot(now);
    expect(merged).to.deep.equal(single);
    expect(merged).to.include({ attempts: 99, lastStatus: 200 });
    expect(merged!.successRate).to.equal(85 / 99);
    // Exact bucket bounds, not estimates: rank 50 of 99 is A's 50 ms (bucket 1.25^18 = 55.51 ms);
    // rank 99 is B's 3960 ms (bucket 1.25^38 = 4814.82 ms).
    expect(merged!.p50Ms).to.equal(55.51);
    expect(merged!.p99Ms).to.equal(4814.82);
  });

  it('counts only the last hour, and lists a URL without requests in it with its last state', () => {
    const a = new HealthTracker();
    const b = new HealthTracker();
    a.record('web', URL_A, T0, false, 500, null, 10);
    b.record('web', URL_A, T0 + 2 * 3600_000, true, 200, null, 10);
    b.record('app', 'http://b.test/x', T0 + 2 * 3600_000, true, 204, null, 3);
    const now = T0 + 2 * 3600_000;
    const merged = mergeHealth([shared(a, now), shared(b, now)], now);
    expect(merged.map((e) => [e.source, e.url, e.attempts, e.lastStatus])).to.deep.equal([
      ['app', 'http://b.test/x', 1, 204],
      ['web', URL_A, 1, 200],
    ]);
    expect(mergeHealth([], now)).to.deep.equal([]);
  });

  it('takes the last status and error from the latest request on any instance', () => {
    const a = new HealthTracker();
    const b = new HealthTracker();
    a.record('web', URL_A, T0 + 5, false, null, 'ERR_TIMEOUT', 5000);
    b.record('web', URL_A, T0 + 3, false, 503, null, 5);
    const [e] = mergeHealth([shared(b, T0), shared(a, T0)], T0 + 10);
    expect(e).to.include({ lastAttemptAt: T0 + 5, lastStatus: null, lastError: 'ERR_TIMEOUT' });
  });

  it('sums the runs of failures that came after the latest 2xx on any instance', () => {
    const a = new HealthTracker();
    const b = new HealthTracker();
    const c = new HealthTracker();
    // A: 3 failures. B: a 2xx later than A's failures, then 2 failures. C: a 2xx before all of it.
    for (let i = 0; i < 3; i++) a.record('web', URL_A, T0 + i, false, 503, null, 5);
    b.record('web', URL_A, T0 + 10, true, 200, null, 5);
    b.record('web', URL_A, T0 + 11, false, 503, null, 5);
    b.record('web', URL_A, T0 + 12, false, 503, null, 5);
    c.record('web', URL_A, T0 - 100, true, 200, null, 5);
    const now = T0 + 1000;
    const views = [shared(a, now), shared(b, now), shared(c, now)];
    // A's run ended with B's 2xx (the URL answered after it); B's run counts.
    expect(mergeHealth(views, now)[0]!.consecutiveFailures).to.equal(2);
    // A fails again after B's 2xx: its whole current run counts (it began before, and never saw a 2xx).
    a.record('web', URL_A, T0 + 20, false, 503, null, 5);
    expect(mergeHealth([shared(a, now), shared(b, now), shared(c, now)], now)[0]!.consecutiveFailures).to.equal(2 + 4);
    // A 2xx anywhere after every failure: none.
    c.record('web', URL_A, T0 + 30, true, 200, null, 5);
    const after = mergeHealth([shared(a, now), shared(b, now), shared(c, now)], now)[0]!;
    expect(after).to.include({ consecutiveFailures: 0, lastStatus: 200 });
  });

  it('is the instance’s own health with one view', () => {
    const a = new HealthTracker();
    a.record('web', URL_A, T0, false, 503, null, 5);
    a.record('web', URL_A, T0 + 1, false, 503, null, 7);
    expect(mergeHealth([shared(a, T0 + 5)], T0 + 5)).to.deep.equal(a.snapshot(T0 + 5));
    expect(a.snapshot(T0 + 5)[0]!.consecutiveFailures).to.equal(2);
  });
});

describe('mergeTimeline (several instances, one chart)', () => {
  it('sums accepted, delivered and failed per minute and takes the latest queue depth sample', () => {
    const a = new Timeline();
    const b = new Timeline();
    a.accepted(T0, 5);
    a.finished(T0 + 1000, 'delivered');
    a.queueDepth(T0 + 30_000, 9);
    b.accepted(T0 + 2000, 3);
    b.finished(T0 + 3000, 'failed');
    b.finished(T0 + 3000, 'delivered');
    b.queueDepth(T0 + 45_000, 4);
    b.accepted(T0 + 60_000, 2);
    const now = T0 + 90_000;
    const read = (t: Timeline) => t.minutes(0).map((m) => decodeTimelineMinute(encodeTimelineMinute(m), m.minute)!);
    const points = mergeTimeline([read(a), read(b)], now);
    expect(points).to.have.length(60);
    expect(points.at(-2)).to.deep.equal({ at: T0, accepted: 8, delivered: 2, failed: 1, queueDepth: 4 });
    expect(points.at(-1)).to.deep.equal({ at: T0 + 60_000, accepted: 2, delivered: 0, failed: 0, queueDepth: null });
    // A later sample from A wins the minute.
    a.queueDepth(T0 + 50_000, 7);
    expect(mergeTimeline([read(a), read(b)], now).at(-2)!.queueDepth).to.equal(7);
    expect(mergeTimeline([read(a)], now)).to.deep.equal(a.points(now));
  });
});

describe('the shared text form of health and timeline', () => {
  it('round-trips, and refuses what is not its form instead of reading half of it', () => {
    const a = new HealthTracker();
    a.record('web', 'http://a.test/"quoted"', T0, true, 200, null, 12);
    a.record('web', 'http://a.test/"quoted"', T0 + 1, false, null, 'ERR_NETWORK', 300);
    expect(decodeLatest(encodeLatest(a.latest()))).to.deep.equal(a.latest());
    const minute = Math.floor(T0 / 60_000);
    const decoded = decodeHealthMinute(encodeHealthMinute(a.minutes(minute, minute)), minute)!;
    expect(decoded.map((m) => [m.attempts, m.ok, Array.from(m.histogram).reduce((x, y) => x + y, 0)])).to.deep.equal([[2, 1, 2]]);
    for (const bad of ['', 'nope', '{}', '[[1]]', '[["web","u",1,null,null,-1,null]]', '[["web","u","1",null,null,0,null]]']) expect(decodeLatest(bad), bad).to.equal(undefined);
    for (const bad of ['[["web","u",2,1,[0,1]]]', '[["web","u",1,2,[0,1]]]', '[["web","u",1,1,[53,1]]]', '[["web","u",1,1,[0]]]']) {
      expect(decodeHealthMinute(bad, minute), bad).to.equal(undefined);
    }
    expect(decodeTimelineMinute('null', minute)).to.equal(null);
    expect(decodeTimelineMinute('[1,0,0,null,5]', minute)).to.equal(undefined);
    expect(decodeTimelineMinute('[1,0,0,3]', minute)).to.equal(undefined);
  });
});
