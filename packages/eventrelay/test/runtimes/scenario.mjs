// The script every runtime test runs inside its runtime (Node, Bun, Deno, workerd, the Edge
// runtime), on the built package: plain JavaScript, no Node module, no import of its own. The
// Node side (harness.ts) serves the sink it sends to and checks the report it returns.

/**
 * Runs the client checks once per transport variant, and the receiver checks once.
 * `sdk` is `eventrelay`, `webhooks` is `eventrelay/webhooks`; `config` comes from harness.ts:
 * `{ sink, variants, writeKey, webhook: { body, signature, secret } }`.
 */
export async function runScenario(sdk, webhooks, config) {
  const timer = setTimeout(() => {}, 0);
  clearTimeout(timer);
  const report = { timer: typeof timer, variants: {}, receiver: await receiverChecks(webhooks, config.webhook) };
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
