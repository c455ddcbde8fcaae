// What a Node team would build instead of eventrelay's forwarder: Express takes the batch, BullMQ
// (Redis) queues one job per message and answers 200 once Redis has them, and a Worker in the same
// process signs each webhook (HMAC-SHA1, X-Signature) and POSTs it, retried by BullMQ on failure.
// Run by bench/forwarder.mjs as its own process; it prints "listening on <url>".
//
//   node bench/forwarder-bullmq.mjs <receiverUrl> <writeKey> <secret> <queueName> [concurrency=64] [bulk|add]
//
// `bulk` (default) queues a batch's jobs with one `queue.addBulk` call (one round trip, one fsync);
// `add` calls `queue.add` once per message, all at once, as BullMQ's getting-started guide shows.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import express from 'express';
import { Queue, Worker } from 'bullmq';
import { webhookBody } from './webhook-body.mjs';

const [receiverUrl, writeKey, secret, queueName, concurrencyArg, addArg] = process.argv.slice(2);
const perMessage = addArg === 'add';
const connection = { host: '127.0.0.1', port: 6379, maxRetriesPerRequest: null };
const queue = new Queue(queueName, { connection });
const expected = `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const target = new URL(receiverUrl);

const app = express();
app.use(express.json({ limit: '600kb' }));
app.post('/v1/batch', async (req, res) => {
  if (req.get('authorization') !== expected) return res.status(401).json({ success: false });
  const batch = req.body?.batch;
  if (!Array.isArray(batch)) return res.status(400).json({ success: false });
  const receivedAt = new Date().toISOString();
  const jobs = [];
  for (const m of batch) {
    if (typeof m?.type !== 'string' || (m.userId === undefined && m.anonymousId === undefined)) continue;
    jobs.push({
      name: m.type,
      data: webhookBody(m, receivedAt),
      opts: { jobId: m.messageId, attempts: 10, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: 1000 },
    });
  }
  try {
    // addBulk: one round trip for the batch; with appendfsync always, Redis answers after its fsync.
    if (perMessage) await Promise.all(jobs.map((job) => queue.add(job.name, job.data, job.opts)));
    else await queue.addBulk(jobs);
    res.json({ success: true });
  } catch {
    res.status(503).json({ success: false });
  }
});

function post(body) {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent,
        timeout: 5000,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
          'User-Agent': 'Bench-Webhooks/1.0',
          'X-Signature': createHmac('sha1', secret).update(body).digest('hex'),
        },
      },
      (response) => {
        response.resume();
        response.on('end', () => (response.statusCode >= 200 && response.statusCode < 300 ? resolve() : reject(new Error(`HTTP ${response.statusCode}`))));
      },
    );
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', reject);
    request.end(body);
  });
}

const worker = new Worker(queueName, (job) => post(JSON.stringify(job.data)), { connection, concurrency: Number(concurrencyArg ?? 64) });
worker.on('error', () => {});

const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`));
process.on('SIGTERM', async () => {
  server.close();
  await worker.close();
  await queue.obliterate({ force: true }).catch(() => {});
  await queue.close();
  process.exit(0);
});
