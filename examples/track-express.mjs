// Track events from an Express app, and flush what is queued when the process is asked to stop.
// Run: EVENTRELAY_ENDPOINT=http://127.0.0.1:8787 EVENTRELAY_WRITE_KEY=... node examples/track-express.mjs
import express from 'express';
import { Analytics } from 'eventrelay';

const analytics = new Analytics({
  writeKey: process.env.EVENTRELAY_WRITE_KEY ?? 'demo-write-key',
  endpoint: process.env.EVENTRELAY_ENDPOINT ?? 'http://127.0.0.1:8787',
});
// Failures never throw into request handlers; log them here.
analytics.on('error', (error) => console.error(`analytics: ${error.code}: ${error.message}`));

const app = express();
app.use(express.json());

app.post('/signup', (req, res) => {
  const { userId, plan } = req.body ?? {};
  analytics.identify({ userId, traits: { plan } });
  analytics.track({ userId, event: 'Signed Up', properties: { plan } });
  res.status(201).json({ ok: true });
});

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});

process.on('SIGTERM', async () => {
  server.close();
  await analytics.closeAndFlush({ timeout: 5000 });
  console.log('flushed');
});
