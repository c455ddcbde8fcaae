import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import createDebug from 'debug';
import { systemClock } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import type { ResolvedConfig } from '../config';
import { OperatorLog } from '../observability/logs';
import type { Operations } from '../observability/operations';
import type { Scheduler } from '../scheduling/queue';
import type { ForwarderStore } from '../store/contract';
import type { ForwarderEvents, ForwarderInternals, ForwarderOptions } from './types';

export const log = createDebug('eventrelay:forwarder');

/** The store once open, and what observes it (the delivery log, live stream, health, timeline). */
export interface Opened {
  readonly store: ForwarderStore;
  readonly ops: Operations;
  /** The delivery loop on the store, started by `start()`. */
  readonly loop: Scheduler;
}

/**
 * How a part built before the store opens reaches it: the lifecycle, which owns the order in
 * which things open, gives each such part this read-only view at construction.
 */
export interface StoreAccess {
  /** Opens the store if needed (once; not cached when it fails), without starting delivery. */
  open(): Promise<Opened>;
  /**
   * The store from the moment it opened, before `open()` resolves (the registry of sources and
   * the endpoint states load from it then); undefined before and when opening failed.
   */
  readonly store: ForwarderStore | undefined;
  /** Observability once `open()` resolved. */
  readonly ops: Operations | undefined;
  /** The delivery loop once `open()` resolved (running once the forwarder started). */
  readonly loop: Scheduler | undefined;
  /** True once `close()` began. */
  readonly closing: boolean;
}

/**
 * What the parts of a forwarder share, all known at construction: its config, clock, events and
 * operator log. Each part gets it at construction; none reaches another part through it.
 */
export class Context {
  readonly clock: Clock;
  /** This process among the instances sharing a store: host, pid and a random part. */
  readonly instanceId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  /** Operator log lines (`options.logger`): nothing without one. */
  readonly oplog: OperatorLog;

  constructor(
    readonly config: ResolvedConfig,
    readonly options: ForwarderOptions,
    readonly internals: ForwarderInternals,
    readonly events: EventEmitter<ForwarderEvents>,
  ) {
    this.clock = internals.clock ?? systemClock;
    this.oplog = new OperatorLog(options.logger, this.clock);
  }

  /** A failure in the background: the `error` event when someone listens, logged either way. */
  backgroundError(error: Error, what = 'background error'): void {
    log('%s: %s', what, error.message);
    this.oplog.fault(what, error);
    if (this.events.listenerCount('error') > 0) this.events.emit('error', error);
  }
}
