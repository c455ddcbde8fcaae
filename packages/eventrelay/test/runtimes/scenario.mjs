// The script every runtime test runs inside its runtime (Node, Bun, Deno, workerd, the Edge
// runtime), on the built package: plain JavaScript, no Node module, no import of its own. The
// Node side (harness.ts) serves the sink it sends to and checks the report it returns.

/**
 * Runs the client checks once per transport variant, and the receiver and Segment layer checks
 * once. The modules are the built package's entry points: `sdk` is `eventrelay`, `webhooks`
 * `eventrelay/webhooks`, `segment` `eventrelay/segment`, `classic` `eventrelay/analytics-node`;
 * `config` comes from harness.ts: `{ sink, variants, writeKey, webhook: { body, signature, secret } }`.
 */
export async function runScenario({ sdk, webhooks, segment, classic }, config) {
  const timer = setTimeout(() => {}, 0);
  clearTimeout(timer);
  const report = {
    timer: typeof timer,
    variants: {},
    receiver: await receiverChecks(webhooks, config.webhook),
    segment: await segmentChecks(segment, config.sink, config.writeKey),
    classic: await classicChecks(classic, config.sink, config.writeKey),
    // An error no callback or listener hears is a warning, once per code (the runtime's way).
    clientWarnings: await warningsDuring(() => {
      const bare = new sdk.Analytics({ writeKey: config.writeKey, endpoint: config.sink, disable: true });
      bare.track({ event: 'No user' });
      bare.track({ event: 'No user either' });
    }),
  };
  try {
    new sdk.NodeTransport().close();
    report.nodeTransport = 'available';
  } catch (error) {
    report.nodeTransport = error.code;
  }
  for (const variant of config.variants) {
    const transport = () => (variant === 'fetch' ? new sdk.FetchTransport() : variant === 'node' ? new sdk.NodeTransport() : undefined);
    report.variants[variant] = await clientChecks(sdk, `${config.sink}/${variant}`, config.writeKey, transport);
  }
  return report;
}

/** Counts each message's callback calls and keeps the first error code it saw. */
function recorder() {
  const calls = {};
  const errors = {};
  return {
    calls,
    errors,
    callback(key) {
      return (error, messageId) => {
        calls[key] = (calls[key] ?? 0) + 1;
        if (!(key in errors)) errors[key] = error ? error.code : null;
        if (messageId !== undefined) calls[`${key}.id`] = messageId;
      };
    },
  };
}

async function clientChecks(sdk, base, writeKey, transport) {
  const clients = [];
  const client = (path, options) => {
    const made = new sdk.Analytics({ writeKey, endpoint: `${base}/${path}`, transport: transport(), ...options });
    clients.push(made);
    return made;
  };
  const seen = recorder();
  const result = {};

  // The six calls in one batch, plus one refused call (never sent, its callback still called once).
  const calls = client('calls', { flushAt: 6 });
  const refusedEvents = [];
  calls.on('error', (error) => refusedEvents.push(error.code));
  calls.identify({ userId: 'u1', traits: { plan: 'pro' } }, seen.callback('identify'));
  calls.track({ userId: 'u1', event: 'Runtime Tested', properties: { runtime: 'x', é: 'ü' } }, seen.callback('track'));
  calls.page({ userId: 'u1', name: 'Home', properties: { path: '/' } }, seen.callback('page'));
  calls.screen({ userId: 'u1', name: 'Main' }, seen.callback('screen'));
  calls.group({ userId: 'u1', groupId: 'g1', traits: { name: 'Team' } }, seen.callback('group'));
  calls.alias({ userId: 'u1', previousId: 'anon-1' }, seen.callback('alias'));
  calls.track({ userId: 'u1' }, seen.callback('invalid'));
  await calls.flush();
  result.refusedEvents = refusedEvents;

  // A 503 is retried (Retry-After: 0), then delivered.
  const retry = client('retry', { minRetryDelay: 10, maxRetryDelay: 50 });
  retry.track({ userId: 'u1', event: 'Retried' }, seen.callback('retried'));

  // flush() covers the batch in flight (the sink holds it until the next one comes) and the queued one.
  const inflight = client('inflight', { flushAt: 2, flushInterval: 60_000 });
  inflight.track({ userId: 'u1', event: 'In flight 1' }, seen.callback('inflight1'));
  inflight.track({ userId: 'u1', event: 'In flight 2' }, seen.callback('inflight2'));
  inflight.track({ userId: 'u1', event: 'Queued' }, seen.callback('queued'));
  const pendingBeforeFlush = inflight.pending;
  const flushed = inflight.flush().then(() => {
    result.flush = {
      pendingBefore: pendingBeforeFlush,
      pendingAfter: inflight.pending,
      calledWhenResolved: ['inflight1', 'inflight2', 'queued'].map((key) => seen.calls[key] ?? 0),
    };
  });

  // The ingestion answer's `rejected` list fails that message only (the transport read the body).
  const rejected = client('rejected', { flushAt: 2 });
  rejected.track({ userId: 'u1', event: 'Refused here' }, seen.callback('rejected0'));
  rejected.track({ userId: 'u1', event: 'Stored' }, seen.callback('rejected1'));

  // gzip through the runtime's CompressionStream, or a ConfigError where there is none.
  let zipped;
  try {
    zipped = client('gzip', { gzip: true });
    zipped.track({ userId: 'u1', event: 'Zipped' }, seen.callback('gzip'));
  } catch (error) {
    result.gzipRefused = `${error.code} ${error.field}`;
  }

  // A request that gets no answer ends at `timeout` (the AbortSignal), with a TimeoutError.
  const stall = client('stall', { timeout: 300, maxRetries: 0 });
  stall.track({ userId: 'u1', event: 'Stalled' }, seen.callback('stalled'));

  // waitUntil gets one promise per batch, settled after the batch's callbacks ran; nothing calls flush().
  const handed = [];
  const waiting = client('waituntil', { flushAt: 10, flushInterval: 50, waitUntil: (promise) => handed.push(promise) });
  waiting.track({ userId: 'u1', event: 'Waited 1' }, seen.callback('waited1'));
  waiting.track({ userId: 'u1', event: 'Waited 2' }, seen.callback('waited2'));
  const handedAtOnce = handed.length;
  await Promise.all(handed);
  result.waitUntil = { handedAtOnce, handed: handed.length, calledWhenSettled: [seen.calls.waited1 ?? 0, seen.calls.waited2 ?? 0] };

  await Promise.all([retry.flush(), flushed, rejected.flush(), zipped?.flush(), stall.flush()]);
  await Promise.all(clients.map((made) => made.closeAndFlush({ timeout: 5000 })));
  result.calls = seen.calls;
  result.errors = seen.errors;
  return result;
}

async function receiverChecks(webhooks, { body, signature, secret }) {
  const bad = '0'.repeat(40);
  const result = {
    verifyAsync: await webhooks.verifySignatureAsync(body, signature, secret),
    verifyAsyncBad: await webhooks.verifySignatureAsync(body, bad, secret),
    signAsync: (await webhooks.signAsync(body, secret)) === signature,
  };
  // The sync functions need node:crypto: true, or the code of what they threw.
  try {
    result.verify = webhooks.verifySignature(body, signature, secret);
  } catch (error) {
    result.verify = error.code;
  }
  try {
    result.sign = webhooks.sign(body, secret) === signature;
  } catch (error) {
    result.sign = error.code;
  }
  const handled = [];
  const handle = webhooks.createFetchHandler({ secret, handler: (message) => void handled.push(message.type) });
  const request = (sig) =>
    new Request('http://127.0.0.1/hooks', { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-signature': sig } });
  result.fetchSigned = (await handle(request(signature))).status;
  result.fetchBad = (await handle(request(bad))).status;
  result.handled = handled;
  return result;
}

/**
 * Runs `fn` (and waits for what it returns) with the runtime's two ways of warning recorded:
 * `process.emitWarning` where there is one, `console.warn` always. Resolves with `{ via, text }`
 * for each warning.
 */
async function warningsDuring(fn) {
  const seen = [];
  const runtime = globalThis.process;
  const emitWarning = typeof runtime?.emitWarning === 'function' ? runtime.emitWarning : undefined;
  const consoleWarn = console.warn;
  console.warn = (...args) => void seen.push({ via: 'console.warn', text: args.join(' ') });
  if (emitWarning) runtime.emitWarning = (message, options) => void seen.push({ via: 'process.emitWarning', text: `${options?.type} [${options?.code}]: ${message}` });
  try {
    await fn();
  } finally {
    console.warn = consoleWarn;
    if (emitWarning) runtime.emitWarning = emitWarning;
  }
  return seen;
}

/** A plugin of Segment's shape that handles `track` with `hook`. */
function trackPlugin(name, type, hook) {
  return { name, type, version: '1.0.0', isLoaded: () => true, load: async () => {}, track: hook };
}

/**
 * `eventrelay/segment` as code written for `@segment/analytics-node` uses it, against the sink at
 * `/segment/<check>/v1/batch` (Segment's `path` setting; `host` is the sink): plugins registered
 * first, the six calls and a refused one with callbacks `(err, ctx)`, the client's events,
 * `closeAndFlush()`, a call after it; a 503 retried; Segment's `FetchHTTPClient`; a setting it
 * does not know.
 */
async function segmentChecks(segment, sink, writeKey) {
  const calls = {};
  const errors = {};
  const ids = {};
  const callback = (key) => (error, ctx) => {
    calls[key] = (calls[key] ?? 0) + 1;
    if (!(key in errors)) errors[key] = error ? (error.code ?? String(error)) : null;
    ids[key] = ctx?.event?.messageId;
  };
  const result = { calls, errors, ids, events: { error: [], track: 0, drained: 0, register: [], callAfterClose: [], requests: [], responses: [] } };
  const { events } = result;

  const analytics = new segment.Analytics({ writeKey, host: sink, path: '/segment/calls/v1/batch', flushAt: 20, flushInterval: 60_000 });
  analytics.on('error', function (failure) {
    events.error.push({ code: failure.code, reason: failure.reason?.code, type: failure.ctx?.event?.type, thisIsClient: this === analytics });
  });
  analytics.on('track', () => void events.track++);
  analytics.on('drained', () => void events.drained++);
  analytics.on('register', (names) => void events.register.push(names));
  analytics.on('call_after_close', (event) => void events.callAfterClose.push(event.type));
  analytics.on('http_request', (request) => void events.requests.push({ url: request.url, authorization: request.headers.authorization }));
  analytics.on('http_response', (response) => void events.responses.push(`${response.status} ${response.statusText}`));

  const destinationSaw = [];
  await analytics.register(
    trackPlugin('Runtime Enrichment', 'enrichment', (ctx) => {
      ctx.updateEvent('properties.enriched', true);
      return ctx;
    }),
    trackPlugin('Runtime Destination', 'destination', (ctx) => {
      destinationSaw.push(ctx.event.event);
      return ctx;
    }),
  );
  result.destinationSaw = destinationSaw;

  analytics.identify({ userId: 'u1', traits: { plan: 'pro' } }, callback('identify'));
  analytics.track({ userId: 'u1', event: 'Runtime Tested', properties: { runtime: 'x' } }, callback('track'));
  analytics.page({ userId: 'u1', category: 'Docs', name: 'Home', properties: { path: '/' } }, callback('page'));
  analytics.screen({ userId: 'u1', name: 'Main' }, callback('screen'));
  analytics.group({ userId: 'u1', groupId: 'g1', traits: { name: 'Team' } }, callback('group'));
  analytics.alias({ userId: 'u1', previousId: 'anon-1' }, callback('alias'));
  analytics.track({ userId: 'u1' }, callback('invalid'));
  const keys = ['identify', 'track', 'page', 'screen', 'group', 'alias', 'invalid'];
  await analytics.closeAndFlush({ timeout: 10_000 });
  result.calledWhenClosed = keys.map((key) => calls[key] ?? 0);
  await new Promise((resolve) => {
    analytics.track({ userId: 'u1', event: 'Too Late' }, (error, ctx) => {
      callback('afterClose')(error, ctx);
      resolve();
    });
  });

  // A 503 (Retry-After: 0) retried with the same messages, each answer an http_response.
  const retry = new segment.Analytics({ writeKey, host: sink, path: '/segment/retry/v1/batch', flushAt: 1, minRetryDelay: 10, maxRetryDelay: 50 });
  const retryResponses = [];
  retry.on('http_response', (response) => void retryResponses.push(`${response.status} ${response.statusText}`));
  await new Promise((resolve) => retry.track({ userId: 'u1', event: 'Retried' }, (error, ctx) => resolve(callback('retried')(error, ctx))));
  await retry.closeAndFlush({ timeout: 10_000 });
  result.retryResponses = retryResponses;

  // Segment's own fetch client, which sets a deadline timer per request.
  const fetching = new segment.Analytics({ writeKey, host: sink, path: '/segment/fetchclient/v1/batch', flushAt: 1, httpClient: new segment.FetchHTTPClient() });
  await new Promise((resolve) => fetching.track({ userId: 'u1', event: 'Fetched' }, (error, ctx) => resolve(callback('fetchClient')(error, ctx))));
  await fetching.closeAndFlush({ timeout: 10_000 });

  // A setting Segment's SDK never had: a warning, not an exception.
  result.warnings = await warningsDuring(() => {
    new segment.Analytics({ writeKey, host: sink, disable: true, runtimeTypo: 1 });
  });
  return result;
}

/**
 * `eventrelay/analytics-node` as code written for the classic `analytics-node` 6 uses it, against
 * `/classic/<check>/v1/batch` (`host` is the sink and the check): chained calls with callbacks
 * `(err, data)`, a refused call, `flush()`, `errorHandler`; and a refused call without
 * `errorHandler`, which the layer reports as a warning.
 */
async function classicChecks(classic, sink, writeKey) {
  const Analytics = classic.default;
  const calls = {};
  const errors = {};
  const ids = {};
  const callback = (key) => (error, data) => {
    calls[key] = (calls[key] ?? 0) + 1;
    if (!(key in errors)) errors[key] = error ? (error.code ?? String(error)) : null;
    ids[key] = data?.batch?.[0]?.messageId;
  };
  const handled = [];
  const client = new Analytics(writeKey, { host: `${sink}/classic/calls`, flushAt: 2, errorHandler: (error) => void handled.push(error.code) });
  const chained = client
    .track({ userId: 'u1', event: 'Classic Tested', properties: { runtime: 'x' } }, callback('track'))
    .identify({ userId: 'u1', traits: { plan: 'pro' } }, callback('identify'))
    .track({ userId: 'u1' }, callback('invalid'));
  await client.flush();
  const result = { named: classic.Analytics === Analytics, chained: chained === client, calledWhenFlushed: ['track', 'identify', 'invalid'].map((k) => calls[k] ?? 0), handled };

  const bare = new Analytics(writeKey, { host: `${sink}/classic/bare` });
  result.warnings = await warningsDuring(() => new Promise((resolve) => bare.track({ userId: 'u1' }, (error, data) => resolve(callback('bare')(error, data)))));
  await bare.flush();
  Object.assign(result, { calls, errors, ids });
  return result;
}
