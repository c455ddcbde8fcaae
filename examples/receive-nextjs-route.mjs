// A Next.js App Router route handler, e.g. app/api/webhooks/route.js. The Fetch adapter
// reads the raw body from the Request itself (never call request.json() first) and
// verifies with Web Crypto, so it also runs with `export const runtime = 'edge'`.
import { createFetchHandler } from 'eventrelay/webhooks';

const handle = createFetchHandler({
  secret: process.env.WEBHOOK_SECRET ?? 'dev-secret',
  handler: async (message) => {
    console.log(`received ${message.type}`);
  },
});

export async function POST(request) {
  return handle(request);
}
