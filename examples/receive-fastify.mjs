// Receive webhooks in a Fastify app. The plugin keeps the raw body for its own route only;
// the app's other routes parse JSON as usual.
// Run: npm run build && WEBHOOK_SECRET=... PORT=3000 node examples/receive-fastify.mjs
// The code below is the "Fastify" snippet of docs/receiving-webhooks.md, line for line.
import Fastify from 'fastify';
import { fastifyWebhook } from 'eventrelay/webhooks';

const app = Fastify();

await app.register(fastifyWebhook, {
  prefix: '/webhooks',
  secret: process.env.WEBHOOK_SECRET,
  handler: async (message) => {
    console.log(`received ${message.type}`);
  },
});

app.post('/api/echo', async (request) => request.body); // other routes still parse JSON

await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
console.log(`listening on ${app.server.address().port}`);
