// Receive webhooks with Node's http module: verify X-Signature, get typed messages.
// Run: npm run build && WEBHOOK_SECRET=... PORT=3000 node examples/receive-node.mjs
// The code below is the "Plain Node http" snippet of docs/receiving-webhooks.md, line for line.
import { createServer } from 'node:http';
import { createWebhookHandler } from 'eventrelay/webhooks';

const handle = createWebhookHandler({
  secret: process.env.WEBHOOK_SECRET,
  // Called only for a verified, valid message. Throw to answer 500 (the sender retries).
  handler: async (message) => {
    if (message.type === 'track') console.log(`received track "${message.event}"`);
    else console.log(`received ${message.type}`);
  },
  onError: (error, status) => console.error(`refused with ${status}: ${error.name}`),
});

// The handler reads the raw body itself; nothing else may read the request first.
const server = createServer(handle); // or call handle(req, res) from your own router
server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});
