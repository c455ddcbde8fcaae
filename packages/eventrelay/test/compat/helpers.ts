import { Analytics, type AnalyticsSettings, type Context, type HTTPClientRequest, type HTTPResponse } from '../../src/compat/segment';

/** An HTTP client for Segment's `httpClient` setting that records requests and answers as told. */
export class RecordingHttpClient {
  readonly requests: HTTPClientRequest[] = [];

  constructor(private answer: (request: HTTPClientRequest, index: number) => HTTPResponse | Promise<HTTPResponse> = () => ok()) {}

  respondWith(answer: (request: HTTPClientRequest, index: number) => HTTPResponse | Promise<HTTPResponse>): void {
    this.answer = answer;
  }

  async makeRequest(request: HTTPClientRequest): Promise<HTTPResponse> {
    this.requests.push(request);
    return this.answer(request, this.requests.length - 1);
  }

  /** Messages in all requests. */
  messagesCount(): number {
    return this.batches.reduce((sum, b) => sum + b.length, 0);
  }

  /** The `batch` arrays of the requests, parsed. */
  get batches(): Record<string, unknown>[][] {
    return this.requests.map((r) => (JSON.parse(r.body) as { batch: Record<string, unknown>[] }).batch);
  }
}

export function ok(): HTTPResponse {
  return { status: 200, statusText: 'OK' };
}

export function failure(status = 404, statusText = 'Not Found'): HTTPResponse {
  return { status, statusText };
}

/**
 * The Segment layer as Segment's own tests build theirs: write key `foo`, flushInterval 100,
 * a recording HTTP client; retries fast (eventrelay's `minRetryDelay`) so failures finish quickly;
 * listening for the six call events from the start.
 */
export function createSegmentClient(settings: Partial<AnalyticsSettings> = {}, { withError = false } = {}) {
  const http = new RecordingHttpClient(() => (withError ? failure() : ok()));
  const analytics = new Analytics({
    writeKey: 'foo',
    flushInterval: 100,
    httpClient: http,
    minRetryDelay: 1,
    maxRetryDelay: 5,
    ...settings,
  });
  // Segment's tests subscribe to a call's event after making the call. eventrelay/segment keeps a
  // call's event only while someone listens for its type, so the test client listens from the start.
  for (const type of ['track', 'identify', 'page', 'screen', 'group', 'alias']) analytics.on(type, () => {});
  return { analytics, http };
}

type CallEvent = 'track' | 'identify' | 'page' | 'screen' | 'group' | 'alias';

/** Resolves with the context of the next `eventName` emitted, rejects with the next `error` (as Segment's `resolveCtx`). */
export function nextCtx(analytics: Analytics, eventName: CallEvent): Promise<Context> {
  return new Promise((resolve, reject) => {
    analytics.once(eventName, resolve);
    analytics.once('error', reject);
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves with the warnings Node emits while `fn` runs (and the next turns of the loop). */
export async function warningsDuring(fn: () => void): Promise<Error[]> {
  const seen: Error[] = [];
  const listener = (warning: Error) => seen.push(warning);
  process.on('warning', listener);
  try {
    fn();
    await sleep(5);
  } finally {
    process.off('warning', listener);
  }
  return seen;
}
