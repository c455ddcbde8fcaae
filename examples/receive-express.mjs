// Receive webhooks in an Express app that also has JSON routes.
// Run: npm run build && WEBHOOK_SECRET=... PORT=3000 node examples/receive-express.mjs
// The code below is the "Express / Connect" snippet of docs/receiving-webhooks.md, line for line.
import express from 'express';
import { webhookMiddleware } from 'eventrelay/webhooks';

const app = express();

// Mount the webhook route BEFORE express.json(): the signature covers the raw bytes, and a
// JSON parser would consume them. (Or put express.raw({ type: '*/*' }) in front of it.)
app.post(
  '/webhooks',
  webhookMiddleware({
    secret: process.env.WEBHOOK_SECRET,
    handler: async (message) => {
      console.log(`received ${message.type}`);
    },
  }),
);

app.use(express.json()); // the app's other routes parse JSON as usual
app.post('/api/echo', (req, res) => res.json(req.body));

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});
