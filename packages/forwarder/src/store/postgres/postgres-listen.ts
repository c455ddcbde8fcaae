import createDebug from 'debug';
import type { Client } from 'pg';
import { CLUSTER, listenChanges } from './sql';

const log = createDebug('eventrelay:forwarder');

/** Delay before a dropped LISTEN connection is opened again, in ms (doubling up to 10 s). */
const RELISTEN_DELAY = 500;
const RELISTEN_MAX = 10_000;
/** Channel names are ours, written into LISTEN statements: plain identifiers only. */
const CHANNEL = /^[a-z_][a-z0-9_]*$/;

interface Registration {
  readonly channel: string;
  readonly onMessage: (payload: string) => void;
  readonly onConnect: (() => void) | undefined;
  readonly ready: () => void;
  /** The connection `onConnect` was last called for. */
  connectedOn: Client | undefined;
}

/** A channel listened to; `stop()` ends it (the connection closes with the last one). */
export interface Listening {
  /** Resolves once the channel is listened to on a connection. */
  readonly ready: Promise<void>;
  stop(): void;
}

/**
 * The one LISTEN connection of an instance, shared by every channel it follows (setup changes,
 * live-stream announcements, relayed events): each instance costs the server one connection more
 * than its pools, however many channels. Open while a channel is listened to; a dropped connection
 * is opened again after a delay that doubles up to 10 s, and listens to every channel again, after
 * which each channel's `onConnect` runs (notifications sent meanwhile are lost).
 */
export class PostgresListener {
  private readonly registrations = new Set<Registration>();
  private client: Client | undefined;
  /** True once `client` is connected; `listened` holds what it LISTENs to. */
  private connected = false;
  private listened = new Set<string>();
  private syncing: Promise<void> = Promise.resolve();
  /** Settles once the connection being opened is open (true), or failed or was closed (false). */
  private opening: Promise<boolean> = Promise.resolve(false);
  private timer: NodeJS.Timeout | undefined;
  private delay = RELISTEN_DELAY;
  private closed = false;

  constructor(
    /** A new client on the store's connection settings (not yet connected). */
    private readonly newClient: () => Client,
    /** Hides the URL's password in driver messages. */
    private readonly hide: (text: string) => string,
  ) {}

  /**
   * Calls `onMessage` with the payload of each notification on `channel`, and `onConnect` each
   * time the channel is listened to on a new connection (something may have been missed meanwhile).
   */
  listen(channel: string, onMessage: (payload: string) => void, onConnect?: () => void): Listening {
    if (!CHANNEL.test(channel)) throw new TypeError(`Not a channel name: ${JSON.stringify(channel)}`);
    let ready!: () => void;
    const promise = new Promise<void>((resolve) => (ready = resolve));
    const registration: Registration = { channel, onMessage, onConnect, ready, connectedOn: undefined };
    if (this.closed) return { ready: promise, stop: () => {} };
    this.registrations.add(registration);
    if (this.client === undefined && this.timer === undefined) this.open();
    else if (this.connected) this.sync(this.client!).catch(() => {});
    return {
      ready: promise,
      stop: () => {
        if (!this.registrations.delete(registration)) return;
        if (this.registrations.size === 0) this.shutdown();
        else if (this.connected) this.sync(this.client!).catch(() => {});
      },
    };
  }

  /**
   * Sends each payload on `channel` in one statement on this connection. While the connection is
   * being opened (an instance that just started can learn of another's subscriber from its row
   * first), it waits for it; it rejects while there is none.
   */
  async notify(channel: string, payloads: readonly string[]): Promise<void> {
    if (this.client !== undefined && !this.connected) await this.opening;
    const client = this.client;
    if (client === undefined || !this.connected) throw new Error('the LISTEN connection is not open');
    await client.query({ text: CLUSTER.relay, values: [channel, payloads] });
  }

  /** Ends the connection; nothing is listened to again. */
  close(): void {
    this.closed = true;
    this.registrations.clear();
    this.shutdown();
  }

  private open(): void {
    if (this.closed || this.registrations.size === 0) return;
    const client = this.newClient();
    this.client = client;
    this.connected = false;
    this.listened = new Set();
    let failed = false;
    const retry = (error: Error): void => {
      if (failed) return;
      failed = true;
      client.removeAllListeners('notification');
      client.end().catch(() => {});
      if (this.client !== client) return;
      this.client = undefined;
      this.connected = false;
      if (this.closed || this.registrations.size === 0) return;
      log('LISTEN connection failed (%s); opening it again in %d ms', this.hide(error.message), this.delay);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.open();
      }, this.delay);
      this.timer.unref();
      this.delay = Math.min(this.delay * 2, RELISTEN_MAX);
    };
    client.on('error', retry);
    client.on('end', () => retry(new Error('connection ended')));
    client.on('notification', (message) => {
      for (const r of this.registrations) if (r.channel === message.channel) r.onMessage(message.payload ?? '');
    });
    const connecting = (async () => {
      await client.connect();
      if (this.client !== client) return false;
      this.connected = true;
      return true;
    })();
    this.opening = connecting.catch(() => false);
    void (async () => {
      try {
        if (!(await connecting)) return;
        await this.sync(client);
        this.delay = RELISTEN_DELAY;
      } catch (error) {
        retry(error as Error);
      }
    })();
  }

  /**
   * LISTENs to the channels registered and UNLISTENs the others, one change at a time; then each
   * registration now listened to on this connection is ready and told it is connected.
   */
  private sync(client: Client): Promise<void> {
    const step = this.syncing.then(async () => {
      if (this.client !== client || !this.connected) return;
      const wanted = new Set([...this.registrations].map((r) => r.channel));
      const listen = [...wanted].filter((c) => !this.listened.has(c));
      const unlisten = [...this.listened].filter((c) => !wanted.has(c));
      if (listen.length + unlisten.length > 0) {
        try {
          await client.query(listenChanges(listen, unlisten));
        } catch (error) {
          // The connection is in doubt: it is closed, and `end` opens a new one.
          client.emit('error', error as Error);
          throw error;
        }
        this.listened = wanted;
      }
      for (const r of [...this.registrations]) {
        if (!this.listened.has(r.channel) || r.connectedOn === client) continue;
        r.connectedOn = client;
        r.ready();
        r.onConnect?.();
      }
    });
    this.syncing = step.catch(() => {});
    return step;
  }

  private shutdown(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const client = this.client;
    this.client = undefined;
    this.connected = false;
    if (client === undefined) return;
    client.removeAllListeners('end');
    client.removeAllListeners('error');
    client.removeAllListeners('notification');
    client.on('error', () => {});
    client.end().catch(() => {});
  }
}
