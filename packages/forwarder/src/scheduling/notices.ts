import { randomBytes } from 'node:crypto';
import { EventRelayError } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import type { WebhookDestination } from '../delivery/destination';
import { NOTIFY_SOURCE } from '../delivery/notify';
import type { Notice } from '../delivery/notify';
import type { ForwarderStore, NewDelivery } from '../store/contract';
import type { NoticeSender } from './outcome';

/**
 * Where a notice for `notify.url` is queued: the store (opened if it is not yet: a URL may be
 * enabled before), and the delivery loop on it, woken to send it. The lifecycle's `StoreAccess`.
 */
export interface NoticeQueue {
  open(): Promise<{ readonly store: Pick<ForwarderStore, 'enqueue'>; readonly loop: { wake(): void } }>;
  /** True once the forwarder began closing: nothing more is queued then. */
  readonly closing: boolean;
}

/** Who hears of a notice besides `notify.url`: the operator's log and the forwarder's `endpoint` event. */
export interface NoticeListeners {
  readonly oplog: { notice(notice: Notice): void };
  readonly events: { emit(event: 'endpoint', notice: Notice): boolean };
  /** A failure in the background (a listener that threw, a notice that could not be queued). */
  backgroundError(error: Error): void;
}

/**
 * The operator's notices (a URL disabled or enabled, a delivery given up): the operator's log,
 * the `endpoint` event and, with `notify`, a signed delivery to `notify.url` queued like any
 * other, under a source of its own. The endpoint guard and the outcome step send them here.
 */
export class Notices implements NoticeSender {
  constructor(
    /** Sends the notices to `notify.url`, signed; undefined without `notify`. */
    readonly notifier: WebhookDestination | undefined,
    private readonly queue: NoticeQueue,
    private readonly listeners: NoticeListeners,
    private readonly clock: Clock,
  ) {}

  send(notice: Notice): void {
    const { listeners } = this;
    listeners.oplog.notice(notice);
    try {
      listeners.events.emit('endpoint', notice);
    } catch (error) {
      listeners.backgroundError(error instanceof Error ? error : new Error(String(error)));
    }
    if (this.notifier === undefined || this.queue.closing) return;
    const delivery: NewDelivery = {
      source: NOTIFY_SOURCE,
      destination: 'notify',
      kind: 'notice',
      messageId: `notice_${randomBytes(12).toString('hex')}`,
      body: JSON.stringify(notice),
      createdAt: this.clock.now(),
    };
    this.queue
      .open()
      .then(async ({ store, loop }) => {
        await store.enqueue([delivery]);
        loop.wake();
      })
      .catch((error: Error) => listeners.backgroundError(new EventRelayError(`Could not queue a ${notice.type} notice: ${error.message}`, 'ERR_STORE_UNAVAILABLE', { cause: error })));
  }

  /** Closes the notifier, once the delivery loop stopped. */
  async close(): Promise<void> {
    await this.notifier?.close();
  }
}
