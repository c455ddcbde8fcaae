// The floor: the least work a correct batching client can do, written by hand.
// Each call builds its message object the way a client must (type, messageId, timestamp,
// userId, event, properties, context.library), serializes it once, and the strings of 20
// messages are joined into one body. Bodies go out over a keep-alive agent with a bounded
// number in flight; 5xx, 429 and network errors are retried after a fixed delay.
// Nothing is prepared ahead of the calls: the floor must pay for what a user's call costs.
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const LIBRARY = { name: 'floor', version: '0.0.0' };

export class FloorClient {
  constructor({ endpoint, writeKey, flushAt = 20, flushInterval = 5000, concurrency = 4, retryDelay = 250, maxRetries = 50 }) {
    const url = new URL('/v1/batch', endpoint);
    this.requestOptions = {
      method: 'POST',
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      agent: new http.Agent({ keepAlive: true, maxSockets: concurrency }),
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`,
      },
    };
    this.flushAt = flushAt;
    this.flushInterval = flushInterval;
    this.concurrency = concurrency;
    this.retryDelay = retryDelay;
    this.maxRetries = maxRetries;
    this.buffer = [];
    this.timer = undefined;
    // Bodies waiting for a free slot: an array with a read index, so taking one is O(1).
    this.pending = [];
    this.pendingHead = 0;
    this.inFlight = 0;
    this.idleWaiters = [];
    this.onError = () => {};
  }

  track({ userId, event, properties }) {
    const message = {
      type: 'track',
      messageId: randomUUID(),
      timestamp: new Date().toISOString(),
      userId,
      event,
      properties,
      context: { library: LIBRARY },
    };
    this.buffer.push(JSON.stringify(message));
    if (this.buffer.length >= this.flushAt) this.cut();
    else if (this.timer === undefined) {
      this.timer = setTimeout(() => this.cut(), this.flushInterval);
      this.timer.unref();
    }
  }

  cut() {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.buffer.length === 0) return;
    const body = `{"batch":[${this.buffer.join(',')}],"sentAt":"${new Date().toISOString()}"}`;
    this.buffer = [];
    this.pending.push(body);
    this.pump();
  }

  pump() {
    while (this.inFlight < this.concurrency && this.pendingHead < this.pending.length) {
      const body = this.pending[this.pendingHead];
      this.pending[this.pendingHead++] = undefined;
      if (this.pendingHead === this.pending.length) {
        this.pending = [];
        this.pendingHead = 0;
      }
      this.inFlight++;
      this.send(body, 0);
    }
    if (this.inFlight === 0 && this.pendingHead === this.pending.length) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  send(body, attempt) {
    const retry = (reason) => {
      if (attempt >= this.maxRetries) {
        this.onError(new Error(`batch dropped after ${attempt + 1} attempts: ${reason}`));
        this.release();
        return;
      }
      setTimeout(() => this.send(body, attempt + 1), this.retryDelay);
    };
    const req = http.request(this.requestOptions, (res) => {
      res.resume();
      res.on('end', () => {
        const status = res.statusCode;
        if (status >= 200 && status < 300) this.release();
        else if (status >= 500 || status === 429) retry(`HTTP ${status}`);
        else {
          this.onError(new Error(`batch rejected with HTTP ${status}`));
          this.release();
        }
      });
    });
    req.on('error', (error) => retry(error.code ?? error.message));
    req.setHeader('content-length', Buffer.byteLength(body));
    req.end(body);
  }

  release() {
    this.inFlight--;
    this.pump();
  }

  /** Sends what is buffered and resolves when nothing is queued or in flight. */
  closeAndFlush() {
    this.cut();
    if (this.inFlight === 0 && this.pendingHead === this.pending.length) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
