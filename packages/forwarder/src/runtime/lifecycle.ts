import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventRelayError } from 'eventrelay/internal';
import type { ForwarderMetrics } from '../observability/metrics';
import { Operations } from '../observability/operations';
import type { Scheduler } from '../scheduling/queue';
import type { ForwarderStore } from '../store/contract';
import { openConfiguredStore } from '../store/open';
import { log } from './context';
import type { Context, Opened, StoreAccess } from './context';
import type { Deliveries } from './deliveries';
import type { Sources } from './sources';
import type { ListenOptions } from './types';
import type { Work } from './work';

/** How often finished deliveries past the retention are removed, in ms. */
const PRUNE_INTERVAL = 10 * 60_000;
/** Longest wait for requests in progress at shutdown, in ms. */
const DRAIN_TIMEOUT = 10_000;

/** The parts the lifecycle opens, starts and closes; `build` makes them with its `StoreAccess`. */
export interface Managed {
  readonly sources: Sources;
  readonly deliveries: Deliveries;
  readonly work: Work;
  readonly metrics: ForwarderMetrics | undefined;
  /** The HTTP request handler (`http/server.ts`). */
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void;
}

/**
 * The order in which a forwarder's parts open, start and close. Open: the store, then the
 * registry of sources on it, the endpoint states, the following of other instances' changes,
 * observability and the delivery loop (not running yet). Start: the loop and the prunes. Close: the HTTP server (requests being
 * stored finish), the delivery loop (attempts in flight finish, outcomes are written), the
 * destinations, observability, the store. The parts built before the store opens reach it through
 * this object (`StoreAccess`), handed to them as `build` makes them; those built on the open
 * store (observability, the delivery loop and its outcome step) are made here, in that order.
 */
export class Lifecycle<P extends Managed = Managed> implements StoreAccess {
  readonly parts: P;
  /** The request handler, counting the requests in progress (shutdown lets them finish). */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  private opening: Promise<Opened> | undefined;
  private starting: Promise<void> | undefined;
  private closed: Promise<void> | undefined;
  private openStore: ForwarderStore | undefined;
  private opened: Opened | undefined;
  private closeBegan = false;
  private server: Server | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private pendingRequests = 0;
  private idle: (() => void) | undefined;

  constructor(
    private readonly ctx: Context,
    build: (access: StoreAccess) => P,
  ) {
    this.parts = build(this);
    const handle = this.parts.handle;
    this.handler = (req, res) => {
      this.pendingRequests++;
      res.once('close', () => {
        this.pendingRequests--;
        if (this.pendingRequests === 0) this.idle?.();
      });
      handle(req, res);
    };
  }

  get store(): ForwarderStore | undefined {
    return this.openStore;
  }

  get ops(): Operations | undefined {
    return this.opened?.ops;
  }

  get loop(): Scheduler | undefined {
    return this.opened?.loop;
  }

  get closing(): boolean {
    return this.closeBegan;
  }

  /** Opens the store once (not cached when it fails), without starting delivery. */
  open(): Promise<Opened> {
    this.opening ??= (async () => {
      const { ctx } = this;
      const { sources, deliveries, work, metrics } = this.parts;
      const storage = ctx.config.storage;
      const store = ctx.options.store ?? (await openConfiguredStore(storage, { dataDir: ctx.options.dataDir, clock: ctx.clock }));
      this.openStore = store;
      try {
        await sources.attach();
        // Disabled URLs survive restarts (SQLite) and are shared by the instances (PostgreSQL).
        await deliveries.guard.load(store.shared);
      } catch (error) {
        this.openStore = undefined;
        if (ctx.options.store === undefined) await store.close().catch(() => {});
        throw error;
      }
      sources.watch();
      const table = sources.table;
      const ops = new Operations(
        {
          queue: work,
          sources: table,
          endpoints: sources.endpointAdmin,
          store,
          clock: ctx.clock,
          keepDelivered: storage.keepDelivered,
          errors: ctx,
        },
        storage.deliveryLog ? store.openLog({ keepDelivered: storage.keepDelivered }) : undefined,
        metrics,
        store.cluster === null ? undefined : { store: store.cluster, owner: ctx.instanceId },
      );
      const loop = deliveries.loopOn(store, table, ops);
      this.opened = { store, ops, loop };
      return this.opened;
    })().catch((error: unknown) => {
      this.opening = undefined;
      throw error;
    });
    return this.opening;
  }

  /**
   * Opens the store and starts delivering what it holds. Idempotent; after a failure (the database
   * unreachable, ...) it may be called again, and `close()` still works.
   */
  start(): Promise<void> {
    if (this.closed !== undefined) return Promise.reject(closedError());
    this.starting ??= (async () => {
      const { ops, loop } = await this.open();
      const { sources } = this.parts;
      loop.start();
      ops.start();
      this.schedulePrune();
      log('started: %d sources, store %s', sources.table.names.length, this.ctx.options.store ? 'custom' : this.ctx.config.storage.type);
    })().catch((error: unknown) => {
      this.starting = undefined;
      throw error;
    });
    return this.starting;
  }

  private schedulePrune(): void {
    const { ctx } = this;
    this.pruneTimer = setInterval(() => {
      const before = ctx.clock.now() - ctx.config.storage.retention;
      this.openStore?.prune(before).then(
        (removed) => removed > 0 && log('pruned %d finished rows', removed),
        (error: Error) => log('prune failed: %s', error.message),
      );
      this.ops?.prune(before).then(
        (removed) => removed > 0 && log('pruned %d delivery log rows', removed),
        (error: Error) => log('delivery log prune failed: %s', error.message),
      );
    }, PRUNE_INTERVAL);
    this.pruneTimer.unref();
  }

  /** Starts the HTTP server. Resolves with the address it listens on. */
  async listen(options: ListenOptions): Promise<{ url: string; host: string; port: number }> {
    if (this.closed !== undefined) throw closedError();
    if (this.server !== undefined) throw new EventRelayError('The forwarder is already listening; call listen() once', 'ERR_ALREADY_LISTENING');
    const server = createServer({ keepAliveTimeout: 5000, requestTimeout: 30_000 }, this.handler);
    this.server = server;
    try {
      await this.start();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port ?? this.ctx.config.port, options.host ?? this.ctx.config.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      // Not listening (port in use, ...): listen() may be called again.
      this.server = undefined;
      throw error;
    }
    const address = server.address() as AddressInfo;
    const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return { url: `http://${shownHost}:${address.port}`, host: address.address, port: address.port };
  }

  /**
   * Graceful shutdown: stops accepting (new requests get 503, idle connections close), lets
   * requests being stored finish, waits for the webhook attempts in flight and writes their
   * outcomes, then closes the destinations and the store. Returns the same promise when called again.
   */
  close(): Promise<void> {
    this.closed ??= (async () => {
      const { ctx } = this;
      const { sources, deliveries } = this.parts;
      this.closeBegan = true;
      clearInterval(this.pruneTimer);
      sources.unfollow();
      // Live streams never end by themselves: end them, so that shutdown does not wait for them.
      this.ops?.live.close();
      const server = this.server;
      const serverClosed = server === undefined ? Promise.resolve() : new Promise<void>((resolve) => server.close(() => resolve()));
      server?.closeIdleConnections();
      if (this.pendingRequests > 0) {
        // Requests being read or stored may finish; a stalled upload gets 10 s, then its socket is closed.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          new Promise<void>((resolve) => (this.idle = resolve)),
          new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_TIMEOUT))),
        ]);
        clearTimeout(timer);
      }
      server?.closeAllConnections();
      await serverClosed;
      // A start or open that failed left nothing to stop.
      await this.starting?.catch(() => {});
      await this.opening?.catch(() => {});
      // Attempts in flight finish and their outcomes are written; then the guard and the notifier close.
      await this.opened?.loop.stop();
      await deliveries.stop();
      await sources.close();
      await this.ops?.close();
      await this.openStore?.close();
      // The counts of repeated lines still open, so that none is lost at shutdown.
      ctx.oplog.flush();
      log('closed');
    })();
    return this.closed;
  }
}

function closedError(): EventRelayError {
  return new EventRelayError('The forwarder is closed; create a new one', 'ERR_FORWARDER_CLOSED');
}
