import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Metric } from 'prom-client';

/** Live numbers the gauges read when scraped. */
export interface GaugeSource {
  queueDepth(): Promise<{ queueDepth: number; oldestPendingAge: number | null; inFlight: number }>;
  /** Webhook URLs disabled now (delivery.disableAfter), per source. */
  disabledEndpoints?(): ReadonlyMap<string, number>;
}

/** Outcome label of `eventrelay_attempts_total`. */
export type AttemptOutcome = 'delivered' | 'retry' | 'failed';

/**
 * The forwarder's Prometheus metrics, in a registry of its own (never prom-client's global one),
 * so several forwarders in one process keep their numbers apart. Labels are source names and
 * outcomes only: no write key, URL, secret or body ever becomes a label.
 */
export class ForwarderMetrics {
  readonly registry = new Registry();
  private readonly acceptedTotal = new Map<string, number>();
  private readonly refusedTotal = new Map<string, number>();
  /** Ingestion requests refused whole, by `source` ("" when unknown), then reason. */
  private readonly refusedRequestsTotal: Pairs = new Map();
  private readonly duplicatesTotal = new Map<string, number>();
  private readonly deliveredTotal = new Map<string, number>();
  private readonly failedTotal = new Map<string, number>();
  private readonly attemptsTotal: Record<AttemptOutcome, Map<string, number>> = { delivered: new Map(), retry: new Map(), failed: new Map() };
  /** By source, then count → total, as `GET /admin/usage` counts (this instance's part). */
  private readonly usageTotal: Pairs = new Map();
  /** By source, then rule → calls accepted and not forwarded. */
  private readonly filteredTotal: Pairs = new Map();
  private readonly attemptDuration = new SourceHistogram(
    'eventrelay_attempt_duration_seconds',
    'Time of one webhook request until its status line (or error)',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );

  private readonly deliveryLatency = new SourceHistogram(
    'eventrelay_delivery_latency_seconds',
    'From acceptance (or replay) to delivery',
    [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 1800, 3600, 14400],
  );

  constructor(source: GaugeSource, options: { readonly processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    // The delivery path adds to plain numbers; prom-client reads them when scraped (see SourceHistogram).
    const counter = (name: string, help: string, labelNames: string[], read: () => Iterable<[Record<string, string>, number]>) =>
      new Counter({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.reset();
          for (const [labels, total] of read()) this.inc(labels, total);
        },
      });
    const bySource = (totals: ReadonlyMap<string, number>) => () => [...totals].map(([source, total]): [Record<string, string>, number] => [{ source }, total]);
    counter('eventrelay_accepted_total', 'Calls accepted by the ingestion API, duplicates included', ['source'], bySource(this.acceptedTotal));
    counter('eventrelay_refused_total', 'Calls refused by the ingestion API (invalid or too large)', ['source'], bySource(this.refusedTotal));
    // Two labels: no key made by joining strings on the delivery path (it would be hashed again each time).
    const pairs = (totals: Pairs, second: string) => () =>
      [...totals].flatMap(([source, inner]) => [...inner].map(([value, total]): [Record<string, string>, number] => [{ source, [second]: value }, total]));
    counter(
      'eventrelay_requests_refused_total',
      'Ingestion requests refused whole, by source ("" when the write key is unknown, or for a preflight, which names none) and reason: the answer\'s error code (unauthorized, invalid_json, body_too_large, source_deleted, ...), or origin and rate_limit for a browser origin the source does not allow and its ingestRateLimit',
      ['source', 'reason'],
      pairs(this.refusedRequestsTotal, 'reason'),
    );
    counter('eventrelay_duplicates_total', 'Accepted calls whose messageId the source had sent before; not forwarded again', ['source'], bySource(this.duplicatesTotal));
    counter('eventrelay_delivered_total', 'Deliveries a webhook accepted', ['source'], bySource(this.deliveredTotal));
    counter('eventrelay_failed_total', 'Deliveries given up: a final status, or the retry window ran out', ['source'], bySource(this.failedTotal));
    const attempts = this.attemptsTotal;
    counter('eventrelay_attempts_total', 'Webhook attempts by outcome (delivered, retry, failed)', ['source', 'outcome'], () =>
      (['delivered', 'retry', 'failed'] as const).flatMap((outcome) =>
        [...attempts[outcome]].map(([name, total]): [Record<string, string>, number] => [{ source: name, outcome }, total]),
      ),
    );
    counter(
      'eventrelay_usage_total',
      'Calls per source as GET /admin/usage counts them: received (filtered included, a messageId sent again not counted again), filtered, rejected, delivered, failed',
      ['source', 'count'],
      pairs(this.usageTotal, 'count'),
    );
    counter('eventrelay_filtered_total', 'Calls accepted and not forwarded, by the rule that stopped them', ['source', 'rule'], pairs(this.filteredTotal, 'rule'));
    // The registry reads `name`, `help`, `type` and `get()` of what it holds; prom-client's types
    // declare `type` an enum where the registry prints a string, hence the cast.
    this.registry.registerMetric(this.attemptDuration as unknown as Metric);
    this.registry.registerMetric(this.deliveryLatency as unknown as Metric);
    // One scrape reads the store once for the three gauges.
    let reading: Promise<{ queueDepth: number; oldestPendingAge: number | null; inFlight: number }> | undefined;
    const read = () => {
      reading ??= source.queueDepth().finally(() => setImmediate(() => (reading = undefined)));
      return reading;
    };
    new Gauge({
      name: 'eventrelay_queue_depth',
      help: 'Deliveries not finished yet (never tried, or waiting for a retry)',
      registers,
      async collect() {
        this.set((await read()).queueDepth);
      },
    });
    new Gauge({
      name: 'eventrelay_oldest_pending_age_seconds',
      help: 'Age of the oldest unfinished delivery (0 when the queue is empty)',
      registers,
      async collect() {
        this.set(((await read()).oldestPendingAge ?? 0) / 1000);
      },
    });
    new Gauge({
      name: 'eventrelay_in_flight',
      help: 'Webhook attempts in flight now',
      registers,
      async collect() {
        this.set((await read()).inFlight);
      },
    });
    if (source.disabledEndpoints !== undefined) {
      const disabled = source.disabledEndpoints.bind(source);
      new Gauge({
        name: 'eventrelay_endpoints_disabled',
        help: 'Webhook URLs disabled after failing for delivery.disableAfter, per source (as this instance last read them)',
        labelNames: ['source'],
        registers,
        collect() {
          this.reset();
          for (const [name, count] of disabled()) this.set({ source: name }, count);
        },
      });
    }
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'eventrelay_' });
  }

  accepted(source: string, count: number, duplicates: number): void {
    add(this.acceptedTotal, source, count);
    if (duplicates > 0) add(this.duplicatesTotal, source, duplicates);
  }

  /** A count of a source's usage (`rule`: why a filtered call was stopped). */
  usage(source: string, count: string, n: number, rule?: string): void {
    addPair(this.usageTotal, source, count, n);
    if (rule !== undefined) addPair(this.filteredTotal, source, rule, n);
  }

  refused(source: string, count: number): void {
    if (count > 0) add(this.refusedTotal, source, count);
  }

  /** A request refused whole: `reason` is the answer's code (or `origin`, `rate_limit`), never anything the request held. */
  refusedRequest(source: string, reason: string): void {
    addPair(this.refusedRequestsTotal, source, reason, 1);
  }

  /** One attempt: its outcome, the duration of each URL's request and, once delivered, the latency since `since`. */
  attempt(source: string, outcome: AttemptOutcome, urls: readonly { readonly durationMs: number }[], since: number | undefined, now: number): void {
    add(this.attemptsTotal[outcome], source, 1);
    for (const u of urls) this.attemptDuration.observe(source, u.durationMs / 1000);
    if (outcome === 'delivered') {
      add(this.deliveredTotal, source, 1);
      if (since !== undefined) this.deliveryLatency.observe(source, Math.max(0, now - since) / 1000);
    } else if (outcome === 'failed') {
      add(this.failedTotal, source, 1);
    }
  }

  /** Requests of a batch (batched delivery): their durations; its calls count in `attempt`. */
  requests(source: string, urls: readonly { readonly durationMs: number }[]): void {
    for (const u of urls) this.attemptDuration.observe(source, u.durationMs / 1000);
  }

  /** The Prometheus text exposition and its content type. */
  async render(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}

function add(totals: Map<string, number>, source: string, count: number): void {
  totals.set(source, (totals.get(source) ?? 0) + count);
}

/** Totals by source, then by a second label. */
type Pairs = Map<string, Map<string, number>>;

function addPair(totals: Pairs, source: string, second: string, count: number): void {
  let inner = totals.get(source);
  if (inner === undefined) totals.set(source, (inner = new Map()));
  inner.set(second, (inner.get(second) ?? 0) + count);
}

/** A line of prom-client's exposition: `metricName{labels,sharedLabels} value`. */
interface HistogramLine {
  readonly metricName: string;
  readonly labels: { readonly le?: number | string };
  readonly sharedLabels: { readonly source: string };
  readonly value: number;
}

interface SourceBuckets {
  /** Observations per bucket, not cumulative: `counts[i]` those above bound i - 1 and at most bound i. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * A histogram with a `source` label, kept as plain numbers where it is observed and shown by
 * prom-client's registry as its own `Histogram` would show it (`_bucket` lines with `le`, `+Inf`,
 * `_sum`, `_count`). prom-client's `observe` checks and hashes its labels on every call, which
 * showed in V8's profile of the delivery path (bench/forwarder.mjs); here it is a few additions.
 */
export class SourceHistogram {
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  private readonly bySource = new Map<string, SourceBuckets>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {}

  observe(source: string, value: number): void {
    if (!Number.isFinite(value)) return;
    let buckets = this.bySource.get(source);
    if (buckets === undefined) this.bySource.set(source, (buckets = { counts: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 }));
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) buckets.counts[i]!++;
    buckets.sum += value;
    buckets.count++;
  }

  reset(): void {
    this.bySource.clear();
  }

  /** The registry's view: every source's cumulative buckets, then its sum and count. */
  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: HistogramLine[] } {
    const values: HistogramLine[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [source, { counts, sum, count }] of this.bySource) {
      const sharedLabels = { source };
      let total = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        total += counts[i]!;
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels, value: total, metricName: bucket });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels, value: count, metricName: bucket });
      values.push({ labels: {}, sharedLabels, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
