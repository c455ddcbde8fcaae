import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { parseConfig } from '../../src/config';
import { ConfigError } from '../../../eventrelay/src/errors';
import { usePostgres } from '../../../../test/helpers/postgres';
import { useTempDirs } from '../../../../test/helpers/temp-dir';

const TOKEN = 'admin-token-for-batch-7c2d';
const DEFAULTS = { maxBytes: 524_288, maxWaitMs: 1000 };

interface Answer {
  readonly status: number;
  readonly json: any;
}

/** The problems the config file gets for `destination`, with their paths below the destination. */
function fileProblems(destination: unknown): { field: string; message: string }[] {
  const base = 'sources[0].destinations.Webhooks.';
  try {
    parseConfig({ sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: destination } }] }, {});
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    const all = (error as ConfigError).problems ?? [error as ConfigError];
    return all.map((p) => ({ field: p.field!.replace(base, ''), message: p.message.replaceAll(base, '') }));
  }
  return expect.fail('expected a ConfigError');
}

/**
 * A URL's `batch` through the admin API (memory store): set by PUT, shown by GET with every field,
 * kept, replaced and removed by PATCH like `rateLimit`, and refused with the config file's problems.
 */
describe('the admin API: a webhook URL\'s batch setting', function () {
  this.timeout(30_000);
  let forwarder: Forwarder;
  let url: string;

  before(async () => {
    forwarder = createForwarder({
      adminToken: TOKEN,
      storage: { type: 'memory' },
      sources: [
        { name: 'web', writeKey: 'wk-web-batch' },
        { name: 'filed', writeKey: 'wk-filed-batch', destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.test/filed', batch: { maxEvents: 250, maxWaitMs: 0 } }] } } },
      ],
    });
    url = (await forwarder.listen({ port: 0 })).url;
  });
  after(() => forwarder.close());

  async function call(method: string, path: string, body?: unknown): Promise<Answer> {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: await response.json() };
  }

  const WEBHOOKS = '/admin/sources/web/destinations/Webhooks';
  const shownBatches = async (): Promise<unknown[]> => (await call('GET', '/admin/sources/web')).json.destinations.Webhooks.webhooks.map((w: { batch: unknown }) => w.batch);

  it('shows a batch the config file set, its defaults filled', async () => {
    const shown = (await call('GET', '/admin/sources/filed')).json.destinations.Webhooks.webhooks;
    expect(shown[0].batch).to.deep.equal({ maxEvents: 250, maxBytes: DEFAULTS.maxBytes, maxWaitMs: 0 });
  });

  it('PUT sets it per URL; GET shows every field (defaults filled) or null; PATCH keeps, replaces and removes it', async () => {
    const put = await call('PUT', WEBHOOKS, {
      webhooks: [{ url: 'https://hooks.example.test/one' }, { url: 'https://hooks.example.test/many?token=t', batch: { maxEvents: 100 } }],
    });
    expect(put.status, JSON.stringify(put.json)).to.equal(200);
    expect(put.json.webhooks.map((w: { batch: unknown }) => w.batch)).to.deep.equal([null, { maxEvents: 100, ...DEFAULTS }]);
    expect(await shownBatches()).to.deep.equal([null, { maxEvents: 100, ...DEFAULTS }]);

    // A patch that names other fields of the URL keeps its batch; one that gives `batch` replaces it whole.
    const kept = await call('PATCH', WEBHOOKS, { webhooks: [{ from: 0, headers: { 'X-Team': 'a' } }, { from: 1, rateLimit: { perSecond: 5 } }] });
    expect(kept.status, JSON.stringify(kept.json)).to.equal(200);
    expect(await shownBatches()).to.deep.equal([null, { maxEvents: 100, ...DEFAULTS }]);
    const replaced = await call('PATCH', WEBHOOKS, {
      webhooks: [
        { from: 0, batch: { maxEvents: 4000, maxBytes: 1_048_576, maxWaitMs: 60_000 } },
        { from: 1, batch: { maxEvents: 1, maxBytes: 1024, maxWaitMs: 0 } },
      ],
    });
    expect(replaced.status, JSON.stringify(replaced.json)).to.equal(200);
    expect(await shownBatches()).to.deep.equal([
      { maxEvents: 4000, maxBytes: 1_048_576, maxWaitMs: 60_000 },
      { maxEvents: 1, maxBytes: 1024, maxWaitMs: 0 },
    ]);

    // Removed with null on one URL; a new URL with its own batch; the others stay.
    const removed = await call('PATCH', WEBHOOKS, { webhooks: [{ from: 0, batch: null }, { from: 1 }, { url: 'https://hooks.example.test/new', batch: { maxEvents: 3, maxWaitMs: 250 } }] });
    expect(removed.status, JSON.stringify(removed.json)).to.equal(200);
    const shown = (await call('GET', '/admin/sources/web')).json.destinations.Webhooks.webhooks;
    expect(shown.map((w: { batch: unknown }) => w.batch)).to.deep.equal([
      null,
      { maxEvents: 1, maxBytes: 1024, maxWaitMs: 0 },
      { maxEvents: 3, maxBytes: DEFAULTS.maxBytes, maxWaitMs: 250 },
    ]);
    // Nothing else of the URLs moved.
    expect(shown.map((w: { headerNames: string[]; rateLimit: unknown }) => [w.headerNames, w.rateLimit])).to.deep.equal([[['X-Team'], null], [[], { perSecond: 5 }], [[], null]]);

    // A PUT without `batch` leaves none.
    expect((await call('PUT', WEBHOOKS, { webhooks: [{ url: 'https://hooks.example.test/many?token=t' }] })).status).to.equal(200);
    expect(await shownBatches()).to.deep.equal([null]);
  });

  it('PUT refuses hostile batches with the config file\'s problems, each naming its field and range, and changes nothing', async () => {
    expect((await call('PUT', WEBHOOKS, { webhooks: [{ url: 'https://hooks.example.test/a', batch: { maxEvents: 2 } }] })).status).to.equal(200);
    const destination = {
      webhooks: [
        { url: 'https://hooks.example.test/a', batch: { maxEvents: '100', maxBytes: 1024.5, maxWaitMs: -1 } },
        { url: 'https://hooks.example.test/b', batch: { maxEvents: 1e300, maxBytes: 1023, maxWaitMs: 60_001, colour: 'blue' } },
        { url: 'https://hooks.example.test/c', batch: 'fast' },
        { url: 'https://hooks.example.test/d', batch: { maxBytes: 2048 } },
        { url: 'https://hooks.example.test/e', batch: { maxEvents: 0, maxWaitMs: null } },
      ],
    };
    const answer = await call('PUT', WEBHOOKS, destination);
    expect(answer.status).to.equal(400);
    expect(answer.json.error.code).to.equal('invalid_request');
    expect(answer.json.error.problems).to.deep.equal(fileProblems(destination));
    const problems = answer.json.error.problems as { field: string; message: string }[];
    expect(problems.map((p) => p.field)).to.have.members([
      'webhooks[0].batch.maxEvents',
      'webhooks[0].batch.maxBytes',
      'webhooks[0].batch.maxWaitMs',
      'webhooks[1].batch.maxEvents',
      'webhooks[1].batch.maxBytes',
      'webhooks[1].batch.maxWaitMs',
      'webhooks[1].batch.colour',
      'webhooks[2].batch',
      'webhooks[3].batch.maxEvents',
      'webhooks[4].batch.maxEvents',
      'webhooks[4].batch.maxWaitMs',
    ]);
    const about = (field: string) => problems.find((p) => p.field === field)!.message;
    expect(about('webhooks[0].batch.maxEvents')).to.contain('from 1 to 4000');
    expect(about('webhooks[1].batch.maxBytes')).to.contain('from 1024 to 1048576');
    expect(about('webhooks[1].batch.maxWaitMs')).to.contain('from 0 to 60000');
    expect(await shownBatches()).to.deep.equal([{ maxEvents: 2, ...DEFAULTS }]);
  });

  it('PATCH refuses a bad batch on a URL by index or a new one, naming the field, and changes nothing', async () => {
    expect((await call('PUT', WEBHOOKS, { webhooks: [{ url: 'https://hooks.example.test/a', batch: { maxEvents: 2 } }] })).status).to.equal(200);
    const cases: [unknown, string][] = [
      [[{ from: 0, batch: { maxEvents: 5000 } }], 'webhooks[0].batch.maxEvents'],
      [[{ from: 0, batch: { maxEvents: 5, maxBytes: -1 } }], 'webhooks[0].batch.maxBytes'],
      [[{ from: 0, batch: { maxEvents: 5, extra: true } }], 'webhooks[0].batch.extra'],
      [[{ from: 0, batch: [5] }], 'webhooks[0].batch'],
      [[{ from: 0 }, { url: 'https://hooks.example.test/b', batch: { maxEvents: 5.5 } }], 'webhooks[1].batch.maxEvents'],
    ];
    for (const [webhooks, field] of cases) {
      const answer = await call('PATCH', WEBHOOKS, { webhooks });
      expect(answer.status, JSON.stringify(webhooks)).to.equal(400);
      expect(answer.json.error.field, JSON.stringify(webhooks)).to.equal(field);
    }
    expect(await shownBatches()).to.deep.equal([{ maxEvents: 2, ...DEFAULTS }]);
  });

  it('POST /admin/apply lists a batch set, changed or removed', async () => {
    const source = (batch?: object) => ({ name: 'applied', writeKey: 'wk-applied-batch', destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.test/ap', ...(batch === undefined ? {} : { batch }) }] } } });
    expect((await call('POST', '/admin/apply', { sources: [source()] })).status).to.equal(200);
    const set = await call('POST', '/admin/apply', { sources: [source({ maxEvents: 20 })] });
    expect(set.status, JSON.stringify(set.json)).to.equal(200);
    expect(JSON.stringify(set.json)).to.contain('Webhooks.webhooks[0].batch: none → 20 calls, 524288 bytes, 1000 ms');
    expect((await call('GET', '/admin/sources/applied')).json.destinations.Webhooks.webhooks[0].batch).to.deep.equal({ maxEvents: 20, ...DEFAULTS });
    const removed = await call('POST', '/admin/apply', { sources: [source()] });
    expect(JSON.stringify(removed.json)).to.contain('Webhooks.webhooks[0].batch: 20 calls, 524288 bytes, 1000 ms → none');
    expect((await call('GET', '/admin/sources/applied')).json.destinations.Webhooks.webhooks[0].batch).to.equal(null);
  });
});

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`a URL's batch kept by the ${kind} store: shown the same after a restart, removed by PATCH`, function () {
    this.timeout(60_000);
    const db = kind === 'postgres' ? usePostgres() : undefined;
    const tempDir = useTempDirs('eventrelay-batch-');

    it('PUT, restart, GET, PATCH null, restart, GET', async () => {
      const dataDir = tempDir();
      const storage = kind === 'postgres' ? { type: 'postgres' as const, url: db!.url, poolSize: 2 } : { type: kind };
      const open = async () => {
        const forwarder = createForwarder({ adminToken: TOKEN, storage }, { dataDir });
        const { url } = await forwarder.listen({ port: 0 });
        const call = async (method: string, path: string, body?: unknown): Promise<Answer> => {
          const response = await fetch(`${url}${path}`, { method, headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
          return { status: response.status, json: await response.json() };
        };
        return { forwarder, call };
      };
      const batches = async (call: (method: string, path: string) => Promise<Answer>) =>
        (await call('GET', '/admin/sources/kept')).json.destinations.Webhooks.webhooks.map((w: { batch: unknown }) => w.batch);

      const first = await open();
      try {
        expect((await first.call('POST', '/admin/sources', { name: 'kept' })).status).to.equal(201);
        const put = await first.call('PUT', '/admin/sources/kept/destinations/Webhooks', {
          webhooks: [{ url: 'https://hooks.example.test/a', batch: { maxEvents: 40, maxWaitMs: 200 } }, { url: 'https://hooks.example.test/b' }],
        });
        expect(put.status, JSON.stringify(put.json)).to.equal(200);
      } finally {
        await first.forwarder.close();
      }
      const second = await open();
      try {
        expect(await batches(second.call)).to.deep.equal([{ maxEvents: 40, maxBytes: DEFAULTS.maxBytes, maxWaitMs: 200 }, null]);
        expect((await second.call('PATCH', '/admin/sources/kept/destinations/Webhooks', { webhooks: [{ from: 0, batch: null }, { from: 1, batch: { maxEvents: 2 } }] })).status).to.equal(200);
      } finally {
        await second.forwarder.close();
      }
      const third = await open();
      try {
        expect(await batches(third.call)).to.deep.equal([null, { maxEvents: 2, ...DEFAULTS }]);
      } finally {
        await third.forwarder.close();
      }
    });
  });
}
