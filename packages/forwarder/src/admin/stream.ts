import type { IncomingMessage, ServerResponse } from 'node:http';

/** A comment line every 15 s keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;
/** A subscriber that has this much unsent output is too slow to follow: it is dropped. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/** Events of `GET /admin/stream`. */
export type LiveEvent = 'accepted' | 'refused' | 'attempt' | 'replayed';

interface Subscriber {
  readonly res: ServerResponse;
  readonly source: string | undefined;
}

/**
 * The live stream: Server-Sent Events of accepted calls (with their bodies, as they pass) and
 * attempt outcomes, to every subscriber of the source (or of all sources). Nothing is kept:
 * a subscriber sees what happens while it is connected, in this process.
 */
export class LiveStream {
  private readonly subscribers = new Set<Subscriber>();
  private heartbeat: NodeJS.Timeout | undefined;

  /** True when someone listens: events are only built then. */
  get active(): boolean {
    return this.subscribers.size > 0;
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
    req.socket.setTimeout(0);
    res.once('close', () => {
      this.subscribers.delete(subscriber);
      if (this.subscribers.size === 0) this.stopHeartbeat();
    });
    if (this.heartbeat === undefined) {
      this.heartbeat = setInterval(() => {
        for (const s of this.subscribers) s.res.write(': keep-alive\n\n');
      }, HEARTBEAT_MS);
      this.heartbeat.unref();
    }
  }

  publish(event: LiveEvent, source: string, data: object): void {
    if (this.subscribers.size === 0) return;
    const text = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
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
    for (const s of this.subscribers) s.res.end();
    this.subscribers.clear();
    this.stopHeartbeat();
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}
