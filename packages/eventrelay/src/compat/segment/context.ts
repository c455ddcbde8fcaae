import type { SegmentEvent } from './types';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogMessage {
  level: LogLevel;
  message: string;
  time: Date;
  extras?: object | undefined;
}

export interface Metric {
  metric: string;
  value: number;
  type: 'counter' | 'gauge';
  tags: string[];
  timestamp: number;
}

/** Counters and gauges a plugin may record on a context (kept on the context, never sent). */
export class ContextStats {
  metrics: Metric[] = [];

  increment(metric: string, by = 1, tags: string[] = []): void {
    this.metrics.push({ metric, value: by, type: 'counter', tags, timestamp: Date.now() });
  }

  gauge(metric: string, value: number, tags: string[] = []): void {
    this.metrics.push({ metric, value, type: 'gauge', tags, timestamp: Date.now() });
  }

  flush(): void {
    this.metrics = [];
  }
}

export interface CancelationOptions {
  retry?: boolean;
  reason?: string;
  type?: string;
}

/** Thrown (or returned) by a `before` plugin to stop an event. */
export class ContextCancelation {
  retry: boolean;
  type: string;
  reason: string;

  constructor(options: CancelationOptions = {}) {
    this.retry = options.retry ?? true;
    this.type = options.type ?? 'plugin Error';
    this.reason = options.reason ?? '';
  }
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * One call's event as it goes through plugins to the callback: Segment's `Context`.
 * The id, logs and stats are made on first use, so an event nobody inspects costs one object.
 */
export class Context {
  event: SegmentEvent;
  attempts = 0;
  private _id: string | undefined;
  private _failedDelivery: { reason: unknown } | undefined;
  private _logs: LogMessage[] | undefined;
  private _stats: ContextStats | undefined;

  constructor(event: SegmentEvent, id?: string) {
    this.event = event;
    this._id = id;
  }

  /** A context for plugin loading, not tied to a call. */
  static system(): Context {
    return new Context({ type: 'track', event: 'system', messageId: 'system', timestamp: new Date(), context: {}, integrations: {} });
  }

  get id(): string {
    return (this._id ??= globalThis.crypto.randomUUID());
  }

  get stats(): ContextStats {
    return (this._stats ??= new ContextStats());
  }

  isSame(other: Context): boolean {
    return other.id === this.id;
  }

  /** Stops the event: throws `error`, or a `ContextCancelation`. */
  cancel(error?: Error | ContextCancelation): never {
    throw error ?? new ContextCancelation({ reason: 'Context Cancel' });
  }

  log(level: LogLevel, message: string, extras?: object): void {
    (this._logs ??= []).push({ level, message, time: new Date(), extras });
  }

  logs(): LogMessage[] {
    return this._logs ?? [];
  }

  /**
   * Sets a field of the event by dotted path (`context.app.name`), creating objects on the
   * way. An integration turned off (`false`) is not turned back on by its settings.
   */
  updateEvent(path: string, value: unknown): SegmentEvent {
    const keys = path.split('.');
    if (keys.some((key) => FORBIDDEN_KEYS.has(key))) return this.event;
    if (keys[0] === 'integrations' && keys[1] !== undefined && this.event.integrations?.[keys[1]] === false) return this.event;
    let target = this.event as Record<string, unknown>;
    for (let i = 0; i < keys.length - 1; i++) {
      const key = keys[i]!;
      const next = target[key];
      if (typeof next !== 'object' || next === null) target[key] = {};
      target = target[key] as Record<string, unknown>;
    }
    target[keys[keys.length - 1]!] = value;
    return this.event;
  }

  /** Why the event was not delivered, or undefined when it was (or still may be). */
  failedDelivery(): { reason: unknown } | undefined {
    return this._failedDelivery;
  }

  setFailedDelivery(options: { reason: unknown }): void {
    this._failedDelivery = options;
  }

  flush(): void {
    this._logs = undefined;
    this._stats?.flush();
  }

  toJSON(): { id: string; event: SegmentEvent; logs: LogMessage[]; metrics: Metric[] } {
    return { id: this.id, event: this.event, logs: this.logs(), metrics: this._stats?.metrics ?? [] };
  }
}
