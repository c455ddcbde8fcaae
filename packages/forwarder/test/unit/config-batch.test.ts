import { describe, it } from 'mocha';
import { expect } from 'chai';
import { parseConfig } from '../../src/config';
import { batchOption, resolveWebhook } from '../../src/delivery/options';
import { describeChange } from '../../src/registry/reconcile';
import { showWebhooks } from '../../src/registry/manager';
import type { StoredWebhooks, WebhookBatch } from '../../src/store/contract';
import { configErrorOf, refused } from './config-refusal';

const FIELD = 'sources[0].destinations.Webhooks.webhooks[1].batch';

function withBatch(batch: unknown) {
  return { sources: [{ name: 'web', writeKey: 'wk-web', destinations: { Webhooks: { webhooks: [{ url: 'https://example.test/one' }, { url: 'https://example.test/many', batch }] } } }] };
}

/** Values no field of `batch` takes, whatever its range. */
const NOT_INTEGERS: readonly unknown[] = ['100', 1.5, Number.NaN, Number.POSITIVE_INFINITY, JSON.parse('1e400') as number, true, null, [], {}];

describe('batchOption: a URL\'s `batch`, checked and its defaults filled', () => {
  it('fills maxBytes 524288 and maxWaitMs 1000, and keeps what is given at the edges of each range', () => {
    expect(batchOption('webhooks[1].batch', { maxEvents: 100 })).to.deep.equal({ maxEvents: 100, maxBytes: 524_288, maxWaitMs: 1000 });
    expect(batchOption('b', { maxEvents: 1, maxBytes: 1024, maxWaitMs: 0 })).to.deep.equal({ maxEvents: 1, maxBytes: 1024, maxWaitMs: 0 });
    expect(batchOption('b', { maxEvents: 4000, maxBytes: 1_048_576, maxWaitMs: 60_000 })).to.deep.equal({ maxEvents: 4000, maxBytes: 1_048_576, maxWaitMs: 60_000 });
  });

  it('refuses each field out of its range or not an integer, naming the field path and the range', () => {
    const cases: [object, string, string][] = [
      [{ maxEvents: 0 }, 'maxEvents', 'an integer from 1 to 4000, got `0`'],
      [{ maxEvents: 4001 }, 'maxEvents', 'an integer from 1 to 4000, got `4001`'],
      [{ maxEvents: -5 }, 'maxEvents', 'from 1 to 4000'],
      [{}, 'maxEvents', 'from 1 to 4000'],
      [{ maxEvents: 10, maxBytes: 1023 }, 'maxBytes', 'an integer from 1024 to 1048576, got `1023`'],
      [{ maxEvents: 10, maxBytes: 1_048_577 }, 'maxBytes', 'from 1024 to 1048576'],
      [{ maxEvents: 10, maxWaitMs: -1 }, 'maxWaitMs', 'from 0 to 60000'],
      [{ maxEvents: 10, maxWaitMs: 60_001 }, 'maxWaitMs', 'from 0 to 60000'],
      [{ maxEvents: Number.MAX_SAFE_INTEGER + 2 }, 'maxEvents', 'from 1 to 4000'],
    ];
    for (const [value, key, words] of cases) {
      const error = configErrorOf(() => batchOption('webhooks[1].batch', value));
      expect(error.field, JSON.stringify(value)).to.equal(`webhooks[1].batch.${key}`);
      expect(error.message, JSON.stringify(value)).to.contain(`\`webhooks[1].batch.${key}\``).and.to.contain(words);
    }
    for (const bad of NOT_INTEGERS) {
      for (const key of ['maxEvents', 'maxBytes', 'maxWaitMs']) {
        const error = configErrorOf(() => batchOption('webhooks[0].batch', { maxEvents: 10, [key]: bad }));
        expect(error.field, `${key}: ${String(bad)}`).to.equal(`webhooks[0].batch.${key}`);
      }
    }
  });

  it('refuses a field it does not know (inherited names too) and a batch that is not an object', () => {
    for (const key of ['maxWait', 'toString', '__proto__x', 'MaxEvents']) {
      expect(configErrorOf(() => batchOption('webhooks[0].batch', { maxEvents: 10, [key]: 1 })).field).to.equal(`webhooks[0].batch.${key}`);
    }
    for (const bad of [100, '100', true, [], [{ maxEvents: 10 }]]) {
      expect(configErrorOf(() => batchOption('webhooks[0].batch', bad)).field, JSON.stringify(bad)).to.equal('webhooks[0].batch');
    }
  });

  it('is what a resolved webhook holds: undefined without `batch`, its settings with one', () => {
    expect(resolveWebhook({ url: 'https://example.test/a' }, 0).batch).to.equal(undefined);
    expect(resolveWebhook({ url: 'https://example.test/a', batch: { maxEvents: 7, maxWaitMs: 0 } }, 2).batch).to.deep.equal({ maxEvents: 7, maxBytes: 524_288, maxWaitMs: 0 });
    expect(configErrorOf(() => resolveWebhook({ url: 'https://example.test/a', batch: { maxEvents: 0 } }, 2)).field).to.equal('webhooks[2].batch.maxEvents');
  });
});

describe('parseConfig: a URL\'s batch', () => {
  it('keeps `batch` as written on its URL (no default added), and nothing on the others', () => {
    const webhooks = parseConfig(withBatch({ maxEvents: 100 }), {}).sources[0]!.webhooks!.webhooks;
    expect(webhooks[1]!.batch).to.deep.equal({ maxEvents: 100 });
    expect(webhooks[0]).to.not.have.property('batch');
    const full = { maxEvents: 4000, maxBytes: 1024, maxWaitMs: 0 };
    expect(parseConfig(withBatch(full), {}).sources[0]!.webhooks!.webhooks[1]!.batch).to.deep.equal(full);
  });

  it('refuses each bad field with its path and range', () => {
    const cases: [object, string, RegExp][] = [
      [{ maxEvents: 0 }, 'maxEvents', /integer from 1 to 4000/],
      [{ maxEvents: 4001 }, 'maxEvents', /integer from 1 to 4000/],
      [{ maxEvents: 2.5 }, 'maxEvents', /integer from 1 to 4000/],
      [{ maxEvents: '10' }, 'maxEvents', /integer from 1 to 4000/],
      [{ maxEvents: 10, maxBytes: 512 }, 'maxBytes', /integer from 1024 to 1048576/],
      [{ maxEvents: 10, maxBytes: 2_000_000 }, 'maxBytes', /integer from 1024 to 1048576/],
      [{ maxEvents: 10, maxWaitMs: -1 }, 'maxWaitMs', /from 0 to 60000/],
      [{ maxEvents: 10, maxWaitMs: 1e12 }, 'maxWaitMs', /from 0 to 60000/],
      [{ maxEvents: 10, maxWaitMs: 100.5 }, 'maxWaitMs', /from 0 to 60000/],
      [{ maxEvents: 10, maxWait: 100 }, 'maxWait', /./],
      [{ maxBytes: 2048 }, 'maxEvents', /./],
    ];
    for (const [batch, key, words] of cases) {
      const error = refused(withBatch(batch));
      expect(error.field, JSON.stringify(batch)).to.equal(`${FIELD}.${key}`);
      expect(error.message, JSON.stringify(batch)).to.match(words);
    }
    for (const bad of [null, 100, 'fast', [], true]) expect(refused(withBatch(bad)).field, JSON.stringify(bad)).to.equal(FIELD);
    // A null `rateLimit` beside it is a problem with its path too, not a TypeError.
    const config = withBatch({ maxEvents: 10 });
    const webhooks = config.sources[0]!.destinations.Webhooks.webhooks as object[];
    webhooks[1] = { ...webhooks[1], rateLimit: null };
    expect(refused(config).field).to.equal('sources[0].destinations.Webhooks.webhooks[1].rateLimit');
  });

  it('reports every problem of every URL at once, each with its path (as `eventrelay check` prints them)', () => {
    const config = {
      sources: [
        {
          name: 'web',
          writeKey: 'wk-web',
          destinations: {
            Webhooks: {
              webhooks: [
                { url: 'https://example.test/a', batch: { maxEvents: 0, maxBytes: 10 } },
                { url: 'https://example.test/b', batch: { maxEvents: 10, maxWaitMs: 'soon', colour: 'blue' } },
              ],
            },
          },
        },
      ],
    };
    const error = refused(config);
    const base = 'sources[0].destinations.Webhooks.webhooks';
    expect(error.problems?.map((p) => p.field).sort()).to.deep.equal(
      [`${base}[0].batch.maxEvents`, `${base}[0].batch.maxBytes`, `${base}[1].batch.maxWaitMs`, `${base}[1].batch.colour`].sort(),
    );
    expect(error.message).to.contain(`at ${base}[0].batch.maxBytes`);
  });
});

describe('a URL\'s batch as shown and as a change', () => {
  const stored = (batch?: WebhookBatch): StoredWebhooks => ({
    webhooks: [{ url: 'https://example.test/a?token=t', headers: {}, ...(batch === undefined ? {} : { batch }) }],
    sharedSecret: undefined,
    signing: 'x-signature',
  });

  it('shows every field with the defaults filled, or null', () => {
    expect(showWebhooks(true, stored({ maxEvents: 5 })).webhooks[0]!.batch).to.deep.equal({ maxEvents: 5, maxBytes: 524_288, maxWaitMs: 1000 });
    const full = { maxEvents: 5, maxBytes: 2048, maxWaitMs: 0 };
    expect(showWebhooks(true, stored(full)).webhooks[0]!.batch).to.deep.equal(full);
    expect(showWebhooks(true, stored()).webhooks[0]!.batch).to.equal(null);
  });

  it('lists a batch set, changed or removed; a default written out is no change', () => {
    const record = (batch?: WebhookBatch) => ({ enabled: true, webhooks: stored(batch) });
    expect(describeChange(record(), true, stored({ maxEvents: 5 }))).to.deep.equal(['Webhooks.webhooks[0].batch: none → 5 calls, 524288 bytes, 1000 ms']);
    expect(describeChange(record({ maxEvents: 5 }), true, stored({ maxEvents: 5, maxWaitMs: 0 }))).to.deep.equal([
      'Webhooks.webhooks[0].batch: 5 calls, 524288 bytes, 1000 ms → 5 calls, 524288 bytes, 0 ms',
    ]);
    expect(describeChange(record({ maxEvents: 5 }), true, stored())).to.deep.equal(['Webhooks.webhooks[0].batch: 5 calls, 524288 bytes, 1000 ms → none']);
    expect(describeChange(record({ maxEvents: 5 }), true, stored({ maxEvents: 5, maxWaitMs: 1000 }))).to.deep.equal([]);
  });
});
