import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
  private readonly acceptedTotal;
  private readonly refusedTotal;
  private readonly duplicatesTotal;
  private readonly deliveredTotal;
  private readonly failedTotal;
  private readonly attemptsTotal;
  private readonly attemptDuration;
  private readonly deliveryLatency;

  constructor(source: GaugeSource, options: { readonly processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    const counter = (name: string, help: string, labelNames: string[] = ['source']) => new Counter({ name, help, labelNames, registers });
    this.acceptedTotal = counter('eventrelay_accepted_total', 'Calls accepted by the ingestion API, duplicates included');
    this.refusedTotal = counter('eventrelay_refused_total', 'Calls refused by the ingestion API (invalid or too large)');
    this.duplicatesTotal = counter('eventrelay_duplicates_total', 'Accepted calls whose messageId the source had sent before; not forwarded again');
    this.deliveredTotal = counter('eventrelay_delivered_total', 'Deliveries a webhook accepted');
    this.failedTotal = counter('eventrelay_failed_total', 'Deliveries given up: a final status, or the retry window ran out');
    this.attemptsTotal = counter('eventrelay_attempts_total', 'Webhook attempts by outcome (delivered, retry, failed)', ['source', 'outcome']);
    this.attemptDuration = new Histogram({
      name: 'eventrelay_attempt_duration_seconds',
      help: 'Time of one webhook request until its status line (or error)',
      labelNames: ['source'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.deliveryLatency = new Histogram({
      name: 'eventrelay_delivery_latency_seconds',
      help: 'From acceptance (or replay) to delivery',
      labelNames: ['source'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 1800, 3600, 14400],
      registers,
    });
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
    this.acceptedTotal.inc({ source }, count);
    if (duplicates > 0) this.duplicatesTotal.inc({ source }, duplicates);
  }

  refused(source: string, count: number): void {
    if (count > 0) this.refusedTotal.inc({ source }, count);
  }

  /** One attempt: its outcome, the duration of each URL's request and, once delivered, the latency since `since`. */
  attempt(source: string, outcome: AttemptOutcome, urls: readonly { readonly durationMs: number }[], since: number | undefined, now: number): void {
    this.attemptsTotal.inc({ source, outcome });
    for (const u of urls) this.attemptDuration.observe({ source }, u.durationMs / 1000);
    if (outcome === 'delivered') {
      this.deliveredTotal.inc({ source });
      if (since !== undefined) this.deliveryLatency.observe({ source }, Math.max(0, now - since) / 1000);
    } else if (outcome === 'failed') {
      this.failedTotal.inc({ source });
    }
  }

  /** The Prometheus text exposition and its content type. */
  async render(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
