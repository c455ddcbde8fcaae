import type { IncomingMessage, ServerResponse } from 'node:http';

/** A comment line every 15 s keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;
/** A subscriber that has this much unsent output is too slow to follow: it is dropped. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/** Events of `GET /admin/stream`. */
export const LIVE_EVENTS = ['accepted', 'refused', 'attempt', 'replayed'] as const;
export type LiveEvent = (typeof LIVE_EVENTS)[number];

/** Where the events go to other instances sharing the store, and come from them. */
export interface LiveRelayHook {
  /** True while another instance has a subscriber: events are built and handed to `send` then. */
  readonly wanted: boolean;
  /** An event published here; `json` is `data` serialized. */
  send(event: LiveEvent, source: string, data: object, json: string): void;
  /** This instance's first subscriber came (true), or its last one left (false). */
  watching(on: boolean): void;
}

interface Subscriber {
  readonly res: ServerResponse;
  readonly source: string | undefined;
}

/**
 * The live stream: Server-Sent Events of accepted calls (with their bodies, as they pass) and
 * attempt outcomes, to every subscriber of the source (or of all sources). Nothing is kept:
 * a subscriber sees what happens while it is connected, here and, through the relay hook, on the
 * other instances sharing the store.
 */
export class LiveStream {
  private readonly subscribers = new Set<Subscriber>();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    /**
     * The relay to the other instances sharing the store (PostgreSQL), undefined on a store of one.
     * A function: the relay (`ClusterView`) is built after this stream, which it delivers to.
     */
    private readonly relayOf: () => LiveRelayHook | undefined,
  ) {}

  private get relay(): LiveRelayHook | undefined {
    return this.relayOf();
  }

  /** True when someone listens, here or on another instance: events are only built then. */
  get active(): boolean {
    return this.subscribers.size > 0 || this.relay?.wanted === true;
  }

  subscribe(req: IncomingMessage, res: ServerResponse, source: string | undefined): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.write(`retry: 2000\n: connected${source === undefined ? '' : ` to source ${JSON.stringify(source)}`}\n\n`);
    const subscriber: Subscriber = { res, source };
    this.subscribers.add(subscriber);
    if (this.subscribers.size === 1) this.relay?.watching(true);
    req.socket.setTimeout(0);
    res.once('close', () => {
      if (!this.subscribers.delete(subscriber) || this.subscribers.size > 0) return;
      this.stopHeartbeat();
      this.relay?.watching(false);
    });
    if (this.heartbeat === undefined) {
      this.heartbeat = setInterval(() => {
        for (const s of this.subscribers) s.res.write(': keep-alive\n\n');
      }, HEARTBEAT_MS);
      this.heartbeat.unref();
    }
  }

  /** An event of this instance: to its subscribers and, when another instance has one, relayed. */
  publish(event: LiveEvent, source: string, data: object): void {
    const relay = this.relay;
    const relayed = relay?.wanted === true;
    if (this.subscribers.size === 0 && !relayed) return;
    const json = JSON.stringify(data);
    if (relayed) relay!.send(event, source, data, json);
    this.write(event, source, json);
  }

  /** An event another instance relayed: to this instance's subscribers only, never relayed again. */
  deliver(event: LiveEvent, source: string, json: string): void {
    this.write(event, source, json);
  }

  private write(event: LiveEvent, source: string, json: string): void {
    if (this.subscribers.size === 0) return;
    const text = `event: ${event}\ndata: ${json}\n\n`;
    for (const s of this.subscribers) {
      if (s.source !== undefined && s.source !== source) continue;
      if (s.res.writableLength > MAX_BUFFERED_BYTES) {
        s.res.destroy();
        continue;
      }
      s.res.write(text);
    }
  }

  /** Ends every stream (shutdown). */
  close(): void {
    const had = this.subscribers.size > 0;
    for (const s of this.subscribers) s.res.end();
    this.subscribers.clear();
    this.stopHeartbeat();
    if (had) this.relay?.watching(false);
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}
