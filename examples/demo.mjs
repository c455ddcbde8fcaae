// The whole path on one machine: client → forwarder → webhook receivers that verify signatures.
// Run with `npm run demo` (builds first). Exits 0 only when every expected webhook arrived with
// a valid X-Signature and the call sent with `integrations: { All: false }` did not arrive.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Analytics } from 'eventrelay';
import { createWebhookHandler } from 'eventrelay/webhooks';
import { createForwarder } from '@eventrelay/forwarder';

const TIMEOUT_MS = 20_000;
const SECRETS = { web: 'demo-web-shared-secret', ios: 'demo-ios-shared-secret' };
const ADMIN_TOKEN = 'demo-admin-token';

const timer = setTimeout(() => {
  console.error(`\nFAILED: not everything arrived within ${TIMEOUT_MS / 1000} s`);
  report();
  process.exit(1);
}, TIMEOUT_MS);

// --- Receivers: one server, a path per source. /ios answers 503 to its first request. ---------
const received = []; // { source, message }
const rejected = []; // { source, status, error }
let iosRequests = 0;
const handlers = Object.fromEntries(
  Object.entries(SECRETS).map(([source, secret]) => [
    source,
    createWebhookHandler({
      secret,
      handler: (message) => {
        received.push({ source, message });
      },
      onError: (error, status) => rejected.push({ source, status, error: error?.message ?? String(error) }),
    }),
  ]),
);
const receiver = createServer((req, res) => {
  const source = req.url === '/ios' ? 'ios' : req.url === '/web' ? 'web' : undefined;
  if (source === undefined) return void res.writeHead(404).end();
  if (source === 'ios' && ++iosRequests === 1) {
    // A receiver that is briefly down: the forwarder must retry.
    req.resume();
    req.on('end', () => res.writeHead(503).end());
    return;
  }
  void handlers[source](req, res);
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${receiver.address().port}`;

// --- Forwarder: SQLite queue in a temporary directory, small retry delays. --------------------
const dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-demo-'));
const forwarder = createForwarder(
  {
    port: 0,
    adminToken: ADMIN_TOKEN,
    delivery: { minRetryDelay: 200, maxRetryDelay: 1000 },
    sources: [
      { name: 'web', writeKey: 'demo-web-write-key', destinations: { Webhooks: { enabled: true, sharedSecret: SECRETS.web, webhooks: [{ url: `${receiverUrl}/web` }] } } },
      { name: 'ios', writeKey: 'demo-ios-write-key', destinations: { Webhooks: { enabled: true, sharedSecret: SECRETS.ios, webhooks: [{ url: `${receiverUrl}/ios` }] } } },
    ],
  },
  { dataDir },
);
const attempts = [];
forwarder.on('attempt', (r) => attempts.push(r));
const { url: forwarderUrl } = await forwarder.listen();

console.log('eventrelay demo');
console.log(`  forwarder  ${forwarderUrl}  (SQLite queue in ${dataDir})`);
console.log(`  receivers  ${receiverUrl}/web and ${receiverUrl}/ios  (/ios answers 503 to its first request)\n`);

// --- What is sent, and what must (or must not) arrive. ----------------------------------------
const expected = []; // { label, source, match(message) }
const forbidden = []; // same shape: must NOT arrive
const expect = (source, label, match) => expected.push({ source, label, match });

const web = new Analytics({ writeKey: 'demo-web-write-key', endpoint: forwarderUrl, flushAt: 20, flushInterval: 100 });
const ios = new Analytics({ writeKey: 'demo-ios-write-key', endpoint: forwarderUrl, flushAt: 1 });
const failures = [];
const done = (label) => (error) => error && failures.push(`${label}: ${error.message}`);

console.log('sent');
const sent = (line) => console.log(`  ${line}`);

web.identify({ userId: 'user-1', traits: { name: 'Ada', plan: 'pro' } }, done('identify'));
expect('web', 'identify user-1 {name, plan}', (m) => m.type === 'identify' && m.userId === 'user-1' && m.traits.name === 'Ada');
sent('web  identify  user-1 traits {name, plan}');

web.track({ userId: 'user-1', event: 'Order Completed', properties: { total: 42.5 } }, done('track'));
expect('web', 'track "Order Completed"', (m) => m.type === 'track' && m.event === 'Order Completed' && m.properties.total === 42.5);
sent('web  track     user-1 "Order Completed"');

const historical = '2024-03-01T12:00:00.000Z';
web.page({ userId: 'user-1', name: 'Pricing', properties: { path: '/pricing', url: 'https://example.com/pricing', title: 'Pricing', referrer: '' }, timestamp: new Date(historical) }, done('page'));
expect('web', `page /pricing (historical timestamp ${historical})`, (m) => m.type === 'page' && m.properties.path === '/pricing' && m.timestamp === historical);
sent(`web  page      user-1 /pricing, timestamp ${historical} (historical import)`);

web.screen({ anonymousId: 'anon-7', name: 'Home', context: { os: { name: 'iOS', version: '17.4' } } }, done('screen'));
expect('web', 'screen "Home" (anonymous)', (m) => m.type === 'screen' && m.name === 'Home' && m.userId === 'anon-7');
sent('web  screen    anon-7 "Home"');

web.group({ userId: 'user-1', groupId: 'acme', traits: { name: 'Acme Inc', employees: 120 } }, done('group'));
expect('web', 'group acme', (m) => m.type === 'group' && m.groupId === 'acme' && m.traits.employees === 120);
sent('web  group     user-1 → acme');

web.alias({ userId: 'user-1', previousId: 'anon-7' }, done('alias'));
expect('web', 'alias anon-7 → user-1', (m) => m.type === 'alias' && m['Previous ID'] === 'anon-7' && m['User ID'] === 'user-1');
sent('web  alias     anon-7 → user-1');

web.track({ userId: 'user-1', event: 'Internal Debug Event', integrations: { All: false } }, done('track All:false'));
forbidden.push({ source: 'web', label: 'track "Internal Debug Event" (integrations All:false)', match: (m) => m.type === 'track' && m.event === 'Internal Debug Event' });
sent('web  track     user-1 "Internal Debug Event" with integrations { All: false }: must NOT arrive');

ios.track({ userId: 'user-1', event: 'App Opened' }, done('ios track'));
expect('ios', 'track "App Opened" (after a 503 and a retry)', (m) => m.type === 'track' && m.event === 'App Opened');
sent('ios  track     user-1 "App Opened"');

await Promise.all([web.closeAndFlush({ timeout: 5000 }), ios.closeAndFlush({ timeout: 5000 })]);
if (failures.length > 0) {
  console.error(`\nFAILED: the client reported errors:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}

async function admin(path, body) {
  const response = await fetch(`${forwarderUrl}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer;
}

const deletion = await admin('/admin/deletions', { userId: 'user-1' });
for (const source of deletion.notified) expect(source, 'delete user-1', (m) => m.type === 'delete' && m.userId === 'user-1');
sent(`admin deletion of user-1 → delete notices to ${deletion.notified.join(', ')}`);

const trait = 'high_value_users';
const audienceIdentify = (userId, value) => (m) => m.type === 'identify' && m.userId === userId && m.traits[trait] === value;
const first = await admin('/admin/audiences/sync', { source: 'web', audience: 'High Value Users', members: ['user-1', 'user-2'] });
expect('web', `identify user-1 {${trait}: true} (sync 1)`, audienceIdentify('user-1', true));
expect('web', `identify user-2 {${trait}: true} (sync 1)`, audienceIdentify('user-2', true));
sent(`admin audience "High Value Users" sync 1: user-1, user-2 → ${first.sent} identify calls (trait ${first.trait})`);

const second = await admin('/admin/audiences/sync', { source: 'web', audience: 'High Value Users', members: ['user-2', 'user-3'] });
expect('web', `identify user-3 {${trait}: true} (sync 2, added)`, audienceIdentify('user-3', true));
expect('web', `identify user-1 {${trait}: false} (sync 2, removed)`, audienceIdentify('user-1', false));
sent(`admin audience "High Value Users" sync 2: user-2, user-3 → ${second.sent} identify calls (+${second.added} -${second.removed})`);

// --- Wait until every expected webhook arrived and the forwarder's queue is empty. ------------
const found = (e) => received.some((r) => r.source === e.source && e.match(r.message));
for (;;) {
  const stats = await forwarder.stats();
  if (expected.every(found) && stats.queueDepth === 0 && stats.inFlight === 0) break;
  await new Promise((resolve) => setTimeout(resolve, 50));
}
clearTimeout(timer);
const ok = report();
await forwarder.close();
await new Promise((resolve) => receiver.close(resolve));
rmSync(dataDir, { recursive: true, force: true });
process.exit(ok ? 0 : 1);

function report() {
  console.log('\nforwarder attempts that did not deliver at once');
  const notFirst = attempts.filter((a) => a.result.status !== 'delivered' || a.result.attempt > 1);
  if (notFirst.length === 0) console.log('  (none)');
  for (const a of notFirst) {
    const why = a.result.status === 'retry' ? ` (${a.result.outcomes.map((o) => `HTTP ${o.status ?? o.error?.code}`).join(', ')}), retried` : '';
    console.log(`  ${a.source}  ${a.kind} ${a.messageId.slice(0, 8)}  attempt ${a.result.attempt}: ${a.result.status}${why}`);
  }

  console.log('\nreceived by the webhooks (each X-Signature verified with eventrelay/webhooks)');
  for (const e of expected) console.log(`  ${found(e) ? 'ok     ' : 'MISSING'}  ${e.source}  ${e.label}`);
  const leaked = forbidden.filter(found);
  for (const f of forbidden) console.log(`  ${leaked.includes(f) ? 'LEAKED ' : 'absent '}  ${f.source}  ${f.label}`);
  for (const r of rejected) console.log(`  REJECTED ${r.source}: ${r.status} ${r.error}`);

  const arrived = expected.filter(found).length;
  const pass = arrived === expected.length && leaked.length === 0 && rejected.length === 0;
  console.log(
    `\n${pass ? 'OK' : 'FAILED'}: ${arrived}/${expected.length} expected webhooks arrived with a valid signature` +
    `, ${received.length} received in all, ${rejected.length} refused` +
    `; the All:false call ${leaked.length === 0 ? 'did not arrive' : 'ARRIVED'}`,
  );
  return pass;
}
