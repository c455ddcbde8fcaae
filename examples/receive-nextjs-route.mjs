// A Next.js App Router route handler, e.g. app/api/webhooks/route.js. The Fetch adapter reads
// the raw body from the Request itself (never call request.json() first) and verifies with Web
// Crypto, so it also runs with `export const runtime = 'edge'`.
// The code below is the "Next.js route handlers" snippet of docs/receiving-webhooks.md, line for line.
import { createFetchHandler } from 'eventrelay/webhooks';

// Created on the first request, not when the module loads: `next build` imports this file
// without WEBHOOK_SECRET, and createFetchHandler refuses a missing secret (ConfigError).
let handle;

export async function POST(request) {
  handle ??= createFetchHandler({
    secret: process.env.WEBHOOK_SECRET,
    handler: async (message) => {
      console.log(`received ${message.type}`);
    },
  });
  return handle(request);
}
