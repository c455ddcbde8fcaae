import { WebhookDestination } from '../delivery/destination';
import { EndpointGuard, GuardedTargets } from '../delivery/endpoint-guard';
import { endpointNotice, NOTIFY_SOURCE } from '../delivery/notify';
import type { Operations } from '../observability/operations';
import type { SourceTable } from '../registry/table';
import { Notices } from '../scheduling/notices';
import { Outcome } from '../scheduling/outcome';
import { Scheduler } from '../scheduling/queue';
import type { ForwarderStore, RateBudget } from '../store/contract';
import { MemoryEndpointStore, MIN_FAILED_ATTEMPTS } from '../store/endpoint-state';
import { MemoryRateBudget } from '../store/rate-budget';
import type { Context, StoreAccess } from './context';

/**
 * The delivery side of a forwarder: the delivery loop (`Scheduler`), which URLs are disabled
 * (`EndpointGuard`), the rate budgets, and the operator's notices (`notify.url`, `endpoint` event).
 */
export class Deliveries {
  /**
   * The send slots of rate-limited URLs: the store's once it is open, this process's before.
   * Looked up per claim: destinations made before the store opened use it too.
   */
  readonly rateBudget: RateBudget;
  /** Which webhook URLs are disabled (delivery.disableAfter), kept in the store once it opens. */
  readonly guard: EndpointGuard;
  /** The operator's notices, from the guard and the outcome step. */
  private readonly notices: Notices;

  constructor(
    private readonly ctx: Context,
    private readonly access: StoreAccess,
  ) {
    const { config, clock } = ctx;
    const localBudget = new MemoryRateBudget(clock);
    this.rateBudget = { claim: (...args) => (access.store?.rateBudget ?? localBudget).claim(...args) };
    const notifier =
      config.notify === undefined
        ? undefined
        : new WebhookDestination(
          {
            webhooks: [{ url: config.notify.url }],
            sharedSecret: config.notify.sharedSecret,
            timeout: config.delivery.timeout,
            retryWindow: config.delivery.retryWindow,
            minRetryDelay: config.delivery.minRetryDelay,
            maxRetryDelay: config.delivery.maxRetryDelay,
            ...config.delivery.networks,
          },
          { clock, ...ctx.internals.destination },
        );
    // Queued in the store (opened if need be) and sent by its delivery loop, both the lifecycle's.
    const notices = new Notices(notifier, access, ctx, clock);
    this.notices = notices;
    const localEndpoints = new MemoryEndpointStore();
    this.guard = new EndpointGuard(
      () => access.store?.endpoints ?? localEndpoints,
      { after: config.delivery.disableAfter, minAttempts: MIN_FAILED_ATTEMPTS },
      clock,
      (change) => notices.send(endpointNotice(change)),
      () => this.wake(),
    );
  }

  /** When delivery started, epoch ms; 0 before. */
  get startedAt(): number {
    return this.access.loop?.startedAt ?? 0;
  }

  /** Attempts in flight now. */
  get active(): number {
    return this.access.loop?.active ?? 0;
  }

  /** The delivery loop, once the store is open (it runs once the forwarder started). */
  get loop(): Scheduler | undefined {
    return this.access.loop;
  }

  /** New work in the store: the delivery loop looks at it now. */
  wake(): void {
    this.access.loop?.wake();
  }

  /**
   * The delivery loop on the open store, for the sources `table` serves, not started; each outcome
   * it writes goes to the outcome step (`scheduling/outcome.ts`): `ops`, the operator's log, the
   * `attempt` event, the notices. The lifecycle builds it once the store is open, and owns it.
   */
  loopOn(store: ForwarderStore, table: SourceTable, ops: Operations): Scheduler {
    const { config, clock } = this.ctx;
    const { concurrency, sourceConcurrency } = config.delivery;
    return new Scheduler(
      store,
      // Disabled URLs are skipped, and a source with none left waits as when switched off.
      // Notices to `notify.url` are queued as a source of their own.
      new GuardedTargets(table, (source) => table.record(source)?.webhooks, this.guard, clock, { name: NOTIFY_SOURCE, target: () => this.notices.notifier }),
      clock,
      {
        concurrency,
        ...(config.sourceConcurrencyAuto === true ? {} : { sourceConcurrency }),
        owner: this.ctx.instanceId,
        leaseMs: config.storage.lease,
        // A handed-over delivery starts its attempt while its lease still outlasts one.
        holdMs: config.storage.lease - config.delivery.timeout - 1000,
        onError: (error) => this.ctx.backgroundError(error),
        onStoreError: (error) => this.ctx.oplog.fault('delivery loop: the store failed; trying again', error),
      },
      new Outcome(ops, this.ctx.oplog, this.ctx.events, this.notices, clock),
    );
  }

  /** Closes the guard and the notifier, once the lifecycle stopped the loop. */
  async stop(): Promise<void> {
    await this.guard.close();
    await this.notices.close();
  }
}
