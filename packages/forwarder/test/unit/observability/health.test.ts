import { describe, it } from 'mocha';
import { expect } from 'chai';
import { HealthTracker } from '../../../src/observability/health';
import { Timeline } from '../../../src/observability/timeline';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('HealthTracker', () => {
  it('tracks the last status, consecutive failures, success rate and duration quantiles per URL', () => {
    const health = new HealthTracker();
    for (let i = 1; i <= 100; i++) health.record('web', 'http://a.test/in', T0 + i, true, 200, null, i);
    health.record('web', 'http://a.test/in', T0 + 200, false, 503, null, 5);
    health.record('web', 'http://a.test/in', T0 + 201, false, null, 'ERR_TIMEOUT', 5000);
    const [a] = health.snapshot(T0 + 1000);
    expect(a).to.include({ source: 'web', url: 'http://a.test/in', lastStatus: null, lastError: 'ERR_TIMEOUT', consecutiveFailures: 2, attempts: 102 });
    expect(a!.successRate).to.be.closeTo(100 / 102, 1e-9);
    // Log-scale buckets: within 25 % above the exact value.
    expect(a!.p50Ms).to.be.within(50, 63);
    expect(a!.p99Ms).to.be.within(99, 125);
    health.record('web', 'http://a.test/in', T0 + 300, true, 204, null, 3);
    expect(health.snapshot(T0 + 1000)[0]!.consecutiveFailures).to.equal(0);
  });

  it('counts only the last hour', () => {
    const health = new HealthTracker();
    health.record('web', 'http://a.test/in', T0, false, 500, null, 10);
    health.record('web', 'http://a.test/in', T0 + 2 * 3600_000, true, 200, null, 10);
    const [a] = health.snapshot(T0 + 2 * 3600_000);
    expect(a).to.include({ attempts: 1, successRate: 1 });
    expect(new HealthTracker().snapshot(T0)).to.deep.equal([]);
  });
});

describe('Timeline', () => {
  it('gives 60 one-minute points, oldest first, with counts and the last queue depth of each minute', () => {
    const timeline = new Timeline();
    timeline.accepted(T0, 5);
    timeline.finished(T0 + 1000, 'delivered');
    timeline.queueDepth(T0 + 2000, 7);
    timeline.queueDepth(T0 + 3000, 4);
    timeline.accepted(T0 + 60_000, 2);
    timeline.finished(T0 + 61_000, 'failed');
    const points = timeline.points(T0 + 90_000);
    expect(points).to.have.length(60);
    expect(points.at(-1)).to.deep.equal({ at: T0 + 60_000, accepted: 2, delivered: 0, failed: 1, queueDepth: null });
    expect(points.at(-2)).to.deep.equal({ at: T0, accepted: 5, delivered: 1, failed: 0, queueDepth: 4 });
    expect(points[0]!.at).to.equal(T0 - 58 * 60_000);
    // An hour later the minute has left the window.
    expect(timeline.points(T0 + 3 * 3600_000).every((p) => p.accepted === 0)).to.equal(true);
  });
});
