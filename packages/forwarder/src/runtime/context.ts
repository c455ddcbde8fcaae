import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import createDebug from 'debug';
import { systemClock } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import type { ResolvedConfig } from '../config';
import { OperatorLog } from '../observability/logs';
import type { Operations } from '../observability/operations';
import type { ForwarderStore } from '../store/contract';
import type { ForwarderEvents, ForwarderInternals, ForwarderOptions } from './types';

export const log = createDebug('eventrelay:forwarder');

/**
 * What the parts of a forwarder share: its config, clock and events, and the store and
 * observability once they are open. Each part gets it at construction; none reaches another
 * part through it.
 */
export class Context {
  readonly clock: Clock;
  /** This process among the instances sharing a store: host, pid and a random part. */
  readonly instanceId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  /** The store, once open (see `Lifecycle#openStore`). */
  store: ForwarderStore | undefined;
  /** The delivery log, live stream, health and timeline: made when the store opens. */
  ops: Operations | undefined;
  /** True once `close()` began. */
  closing = false;
  /** Operator log lines (`options.logger`): nothing without one. */
  readonly oplog: OperatorLog;
  /** Opens the store if needed (set by the lifecycle). */
  open: () => Promise<ForwarderStore> = () => Promise.reject(new Error('no lifecycle'));

  constructor(
    readonly config: ResolvedConfig,
    readonly options: ForwarderOptions,
    readonly internals: ForwarderInternals,
    readonly events: EventEmitter<ForwarderEvents>,
  ) {
    this.clock = internals.clock ?? systemClock;
    this.oplog = new OperatorLog(options.logger, this.clock);
  }

  /** Runs `fn` with the store, opening it if needed; does not start delivering. */
  async withStore<T>(fn: (store: ForwarderStore) => Promise<T>): Promise<T> {
    return fn(await this.open());
  }

  /** A failure in the background: the `error` event when someone listens, logged either way. */
  backgroundError(error: Error, what = 'background error'): void {
    log('%s: %s', what, error.message);
    this.oplog.fault(what, error);
    if (this.events.listenerCount('error') > 0) this.events.emit('error', error);
  }
}
