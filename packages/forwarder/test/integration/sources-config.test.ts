import { describe, it, afterEach } from 'mocha';
import { expect } from 'chai';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { ForwarderConfig, SourceConfig } from '../../src/config';
import { ConfigError, ValidationError } from '../../../eventrelay/src/errors';
import { basic, post, useReceiver, waitFor } from './helpers';
import { useTempDirs } from '../../../../test/helpers/temp-dir';

const TOKEN = 'config-test-admin-token';

describe('the config file and the store: which wins, and when', function () {
  this.timeout(30_000);
  const tempDir = useTempDirs('eventrelay-sources-config-');
  const receiver = useReceiver();
  let dataDir: string;
  let forwarder: Forwarder | undefined;
  let url: string;

  afterEach(async () => {
    await forwarder?.close();
    forwarder = undefined;
  });

  function web(path: string, writeKey = 'file-key-1', extra: Partial<SourceConfig> = {}): SourceConfig {
    return { name: 'web', writeKey, destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}${path}` }] } }, ...extra };
  }

  /** (Re)starts the forwarder on the same SQLite directory with the file's sources. */
  async function start(sources: SourceConfig[], extra: Partial<ForwarderConfig> = {}): Promise<Forwarder> {
    await forwarder?.close();
    forwarder = createForwarder({ adminToken: TOKEN, sources, delivery: { minRetryDelay: 20, maxRetryDelay: 50 }, ...extra }, { dataDir });
    ({ url } = await forwarder.listen({ port: 0 }));
    return forwarder;
  }

  const send = (key: string, messageId: string) => post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId }] }, { Authorization: basic(key) });
  const arrived = (path: string, messageId: string) => waitFor(() => receiver.delivered.some((r) => r.path === path && r.json.messageId === messageId), `${messageId} at ${path}`);

  it('keeps what the admin API changed across restarts while the file entry stays the same, and applies the file once it changes', async () => {
    dataDir = tempDir();
    const f = await start([web('/a')]);
    await f.setWebhooks('web', { webhooks: [{ url: `${receiver.url}/b` }] });
    expect((await send('file-key-1', 'm1')).status).to.equal(200);
    await arrived('/b', 'm1');

    // Same file: the store's version (URL /b) stays.
    await start([web('/a')]);
    expect((await send('file-key-1', 'm2')).status).to.equal(200);
    await arrived('/b', 'm2');

    // The file's entry changed: it wins at this start.
    await start([web('/c')]);
    expect((await send('file-key-1', 'm3')).status).to.equal(200);
    await arrived('/c', 'm3');
    expect(receiver.delivered.filter((r) => r.path === '/a')).to.have.length(0);
  });

  it('gives the file\'s new write key at once and keeps the earlier file key for the grace time', async () => {
    dataDir = tempDir();
    await start([web('/k')]);
    const f = await start([web('/k', 'file-key-2')]);
    expect((await send('file-key-2', 'k1')).status).to.equal(200);
    expect((await send('file-key-1', 'k2')).status).to.equal(200);
    const keys = await f.writeKeys('web');
    expect(keys.map((k) => k.last4)).to.deep.equal(['ey-1', 'ey-2']);
    expect(Date.parse(keys[0]!.expiresAt!) - Date.now()).to.be.within(86_390_000, 86_400_000);
    expect(keys[1]!.expiresAt).to.equal(null);
  });

  it('keeps sources made through the API, and brings a deleted file source back at the next start', async () => {
    dataDir = tempDir();
    const f = await start([web('/keep')]);
    const { writeKey } = await f.createSource('api-made');
    await f.deleteSource('web');
    expect((await send('file-key-1', 'x1')).status).to.equal(401);
    const g = await start([web('/keep')]);
    expect([...g.sources].sort()).to.deep.equal(['api-made', 'web']);
    expect((await send(writeKey, 'x2')).status).to.equal(200);
    expect((await send('file-key-1', 'x3')).status).to.equal(200);
  });

  it('applies a file with `applySources`: every named source made to match, the difference reported, a dry run writing nothing', async () => {
    dataDir = tempDir();
    const f = await start([web('/one')]);
    await f.setWebhooksEnabled('web', false);
    await f.createSource('extra');
    const dry = await f.applySources([web('/two', 'file-key-1', {}), { name: 'ios', writeKey: 'ios-key' }], { dryRun: true });
    expect(dry.applied).to.equal(false);
    expect(dry.text.split('\n')).to.deep.equal([
      `~ web: Webhooks.enabled: false → true; Webhooks.webhooks[0].url: ${receiver.url}/one → ${receiver.url}/two`,
      '+ ios: write key …-key from the file',
      '  extra: in the store only (not in the file): left as it is',
    ]);
    expect((await send('ios-key', 'd1')).status).to.equal(401);
    const done = await f.applySources([web('/two'), { name: 'ios', writeKey: 'ios-key' }]);
    expect(done.applied).to.equal(true);
    expect((await send('ios-key', 'd2')).status).to.equal(200);
    expect((await send('file-key-1', 'd3')).status).to.equal(200);
    await arrived('/two', 'd3');
    const again = await f.applySources([web('/two'), { name: 'ios', writeKey: 'ios-key' }]);
    expect(again).to.include({ applied: false });
    expect(again.text).to.equal('= web: unchanged\n= ios: unchanged\n  extra: in the store only (not in the file): left as it is');
  });

  it('refuses a file key that another source of the store holds, naming the field, and starts nothing', async () => {
    dataDir = tempDir();
    const f = await start([]);
    await f.createSource('first');
    const keyOfFirst = 'file-key-of-first';
    await f.applySources([{ name: 'first', writeKey: keyOfFirst }]);
    await f.close();
    forwarder = createForwarder({ adminToken: TOKEN, sources: [{ name: 'second', writeKey: keyOfFirst }] }, { dataDir });
    let error: unknown;
    try {
      await forwarder.listen({ port: 0 });
    } catch (e) {
      error = e;
    }
    expect(error).to.be.instanceOf(ConfigError).with.property('field', 'sources[0].writeKey');
    expect((error as Error).message).not.to.contain(keyOfFirst);
    await forwarder.close();
    // The data directory was released: a forwarder can start on it.
    await start([]);
  });

  it('refuses, as a ValidationError naming the field, an unknown source or a taken name through the methods', async () => {
    dataDir = tempDir();
    const f = await start([web('/m')]);
    await expectRejected(f.createSource('web'), ValidationError, 'name');
    await expectRejected(f.setWebhooksEnabled('nope', true), ValidationError, 'name');
    await expectRejected(f.setWebhooks('web', { webhooks: [] }), ConfigError, 'webhooks');
    const { writeKey } = await f.createSource('bare');
    // A source without destination has nothing to switch or test.
    await expectRejected(f.setWebhooksEnabled('bare', true), ValidationError, undefined);
    await expectRejected(f.testWebhooks('bare'), ValidationError, undefined);
    // Its key works until a rotation's grace ends.
    const issued = await f.rotateWriteKey('bare', { graceSeconds: 0 });
    expect((await send(writeKey, 'g1')).status).to.equal(401);
    expect((await send(issued.writeKey, 'g2')).status).to.equal(200);
  });

  it('sends a test event through the library method and reports each URL', async () => {
    dataDir = tempDir();
    const f = await start([web('/lib-test')]);
    // A second URL where nothing listens: no status, an error code.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await f.setWebhooks('web', { webhooks: [{ url: `${receiver.url}/lib-test` }, { url: `http://127.0.0.1:${deadPort}/none` }] });
    const result = await f.testWebhooks('web', 'page');
    expect(result).to.include({ type: 'page', delivered: true });
    expect(result.messageId).to.match(/^test-/);
    expect(result.results).to.have.length(2);
    expect(result.results[0]).to.include({ url: `${receiver.url}/lib-test`, status: 200, error: null });
    expect(result.results[1]).to.include({ status: null });
    expect(result.results[1]!.error).to.match(/^ERR_/);
    const sample = receiver.delivered.find((r) => r.json.messageId === result.messageId)!;
    expect(sample.json).to.include({ type: 'page', userId: 'test-user' });
  });
});

async function expectRejected(promise: Promise<unknown>, type: abstract new (...args: never[]) => Error, field: string | undefined): Promise<void> {
  let error: unknown;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  expect(error).to.be.instanceOf(type);
  expect(error).to.have.property('field', field);
}
