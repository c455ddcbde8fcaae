import { describe, it } from 'mocha';
import { expect } from 'chai';
import { Histogram, Registry } from 'prom-client';
import type { Metric } from 'prom-client';
import { ForwarderMetrics, SourceHistogram } from '../../../src/observability/metrics';

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Observations that land on bounds, between them, under the first and over the last. */
const OBSERVED: [string, number][] = [
  ['web', 0],
  ['web', 0.005],
  ['web', 0.0051],
  ['web', 0.01],
  ['web', 0.3],
  ['web', 10],
  ['web', 10.5],
  ['web', 1234],
  ['app "two"', 0.049],
  ['app "two"', 0.05],
  ['app "two"', 2.4999],
];

describe('SourceHistogram (metrics kept as numbers on the delivery path)', () => {
  it("renders exactly what prom-client's own Histogram renders for the same observations", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const histogram = new SourceHistogram('eventrelay_test_seconds', 'A test histogram', BOUNDS);
    ours.registerMetric(histogram as unknown as Metric);
    const reference = new Histogram({ name: 'eventrelay_test_seconds', help: 'A test histogram', labelNames: ['source'], buckets: BOUNDS, registers: [theirs] });
    for (const [source, value] of OBSERVED) {
      histogram.observe(source, value);
      reference.observe({ source }, value);
    }
    const text = await ours.metrics();
    expect(text).to.equal(await theirs.metrics());
    expect(text).to.contain('eventrelay_test_seconds_bucket{le="0.005",source="web"} 2\n');
    expect(text).to.contain('eventrelay_test_seconds_bucket{le="10",source="web"} 6\n');
    expect(text).to.contain('eventrelay_test_seconds_bucket{le="+Inf",source="web"} 8\n');
    expect(text).to.contain('eventrelay_test_seconds_count{source="app \\"two\\""} 3\n');
  });

  it('shows no lines before its first observation, and none after a reset', async () => {
    const registry = new Registry();
    const histogram = new SourceHistogram('eventrelay_test_seconds', 'A test histogram', BOUNDS);
    registry.registerMetric(histogram as unknown as Metric);
    expect(await registry.metrics()).not.to.contain('_bucket');
    histogram.observe('web', 1);
    histogram.observe('web', Number.NaN);
    expect(await registry.metrics()).to.contain('eventrelay_test_seconds_count{source="web"} 1\n');
    registry.resetMetrics();
    expect(await registry.metrics()).not.to.contain('_bucket');
  });
});

describe('ForwarderMetrics', () => {
  it('adds every count per source (and outcome), and the two histograms, to what it renders', async () => {
    const metrics = new ForwarderMetrics({ queueDepth: async () => ({ queueDepth: 3, oldestPendingAge: 1500, inFlight: 2 }) }, { processMetrics: false });
    metrics.accepted('web', 20, 2);
    metrics.accepted('web', 5, 0);
    metrics.accepted('app', 1, 0);
    metrics.refused('web', 0);
    metrics.refused('app', 4);
    metrics.attempt('web', 'delivered', [{ durationMs: 4 }], 1000, 1030);
    metrics.attempt('web', 'retry', [{ durationMs: 30 }, { durationMs: 700 }], undefined, 2000);
    metrics.attempt('web', 'failed', [{ durationMs: 6000 }], undefined, 3000);
    metrics.attempt('app', 'delivered', [{ durationMs: 12 }], undefined, 3000);
    const { text } = await metrics.render();
    const lines = text.split('\n');
    for (const line of [
      'eventrelay_accepted_total{source="web"} 25',
      'eventrelay_accepted_total{source="app"} 1',
      'eventrelay_duplicates_total{source="web"} 2',
      'eventrelay_refused_total{source="app"} 4',
      'eventrelay_attempts_total{source="web",outcome="delivered"} 1',
      'eventrelay_attempts_total{source="web",outcome="retry"} 1',
      'eventrelay_attempts_total{source="web",outcome="failed"} 1',
      'eventrelay_attempts_total{source="app",outcome="delivered"} 1',
      'eventrelay_delivered_total{source="web"} 1',
      'eventrelay_delivered_total{source="app"} 1',
      'eventrelay_failed_total{source="web"} 1',
      'eventrelay_attempt_duration_seconds_bucket{le="0.005",source="web"} 1',
      'eventrelay_attempt_duration_seconds_bucket{le="0.05",source="web"} 2',
      'eventrelay_attempt_duration_seconds_bucket{le="1",source="web"} 3',
      'eventrelay_attempt_duration_seconds_count{source="web"} 4',
      'eventrelay_attempt_duration_seconds_sum{source="web"} 6.734',
      'eventrelay_attempt_duration_seconds_count{source="app"} 1',
      // Only deliveries with an acceptance time count towards the latency.
      'eventrelay_delivery_latency_seconds_bucket{le="0.05",source="web"} 1',
      'eventrelay_delivery_latency_seconds_count{source="web"} 1',
      'eventrelay_queue_depth 3',
      'eventrelay_oldest_pending_age_seconds 1.5',
      'eventrelay_in_flight 2',
    ]) {
      expect(lines, line).to.include(line);
    }
    expect(text).not.to.match(/eventrelay_refused_total\{source="web"\}/);
    expect(text).not.to.match(/eventrelay_delivery_latency_seconds_count\{source="app"\}/);
    // Rendering twice counts nothing twice.
    expect((await metrics.render()).text).to.equal(text);
  });
});

describe('ForwarderMetrics: usage and filtered calls', () => {
  it('counts each source\'s usage by count, and filtered calls by rule, a source name with quotes included', async () => {
    const metrics = new ForwarderMetrics({ queueDepth: async () => ({ queueDepth: 0, oldestPendingAge: null, inFlight: 0 }) }, { processMetrics: false });
    metrics.usage('web', 'received', 5);
    metrics.usage('web', 'filtered', 1, 'blocked_event');
    metrics.usage('web', 'filtered', 2, 'url_filter');
    metrics.usage('app "two"', 'received', 1);
    metrics.usage('web', 'received', 2);
    const { text } = await metrics.render();
    expect(text).to.contain('eventrelay_usage_total{source="web",count="received"} 7\n');
    expect(text).to.contain('eventrelay_usage_total{source="web",count="filtered"} 3\n');
    expect(text).to.contain('eventrelay_usage_total{source="app \\"two\\"",count="received"} 1\n');
    expect(text).to.contain('eventrelay_filtered_total{source="web",rule="blocked_event"} 1\n');
    expect(text).to.contain('eventrelay_filtered_total{source="web",rule="url_filter"} 2\n');
  });
});
