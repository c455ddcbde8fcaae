import { describe, it } from 'mocha';
import { expect } from 'chai';
import { codeBlocks } from '../../../../../test/repo/markdown';
import { withTransform } from './helpers';

/** Every js block of docs/transformations.md's examples, by its first line (`// chat message`). */
const examples = new Map(
  codeBlocks('docs/transformations.md')
    .filter((b) => b.lang === 'js')
    .map((b) => [/^\/\/ (.+)\n/.exec(b.code)?.[1] ?? `line ${b.line}`, b.code] as const),
);

function example(name: string): string {
  const code = examples.get(name);
  if (code === undefined) throw new Error(`docs/transformations.md has no example "${name}" (found: ${[...examples.keys()].join(', ')})`);
  return code;
}

const order = {
  type: 'track',
  messageId: 'm-1',
  userId: 'u1',
  event: 'Order Completed',
  timestamp: '2026-01-01T00:00:00.000Z',
  properties: { total: 42, email: 'a@example.com', sku: 'S-1' },
  context: { ip: '203.0.113.7', library: { name: 'eventrelay' } },
};
const identify = { type: 'identify', messageId: 'm-2', userId: 'u1', timestamp: '2026-01-01T00:00:00.000Z', traits: { email: 'a@example.com', phone: '+1', plan: 'pro' }, context: { ip: '203.0.113.7' } };

async function run(code: string, message: object): Promise<unknown> {
  let output: unknown = 'not run';
  await withTransform(code, async (transform) => {
    const result = await transform.run(message);
    if (!result.ok) throw new Error(result.reason);
    output = result.skip ? null : result.output;
  });
  return output;
}

describe('the examples of docs/transformations.md, each run as written', function () {
  this.timeout(20_000);

  it('has exactly the four examples this test runs', () => {
    expect([...examples.keys()]).to.deep.equal(['chat message', 'renamed fields', 'personal fields removed', 'dropped by a condition']);
  });

  it('chat message: a track becomes a line of text; other calls skip the URL', async () => {
    expect(await run(example('chat message'), order)).to.deep.equal({ text: 'u1 did Order Completed' });
    expect(await run(example('chat message'), { ...order, userId: undefined, anonymousId: 'anon-1' })).to.deep.equal({ text: 'anon-1 did Order Completed' });
    expect(await run(example('chat message'), identify)).to.equal(null);
  });

  it('renamed fields: three renamed, the rest kept', async () => {
    const { userId, event, timestamp, ...rest } = order;
    expect(await run(example('renamed fields'), order)).to.deep.equal({ ...rest, user_id: userId, event_name: event, occurred_at: timestamp });
  });

  it('personal fields removed: from traits, properties and context.ip; the rest kept', async () => {
    expect(await run(example('personal fields removed'), order)).to.deep.equal({ ...order, properties: { total: 42, sku: 'S-1' }, context: { library: { name: 'eventrelay' } } });
    expect(await run(example('personal fields removed'), identify)).to.deep.equal({ ...identify, traits: { plan: 'pro' }, context: {} });
  });

  it('dropped by a condition: small orders skip the URL, the rest go as they are', async () => {
    expect(await run(example('dropped by a condition'), order)).to.equal(null);
    const big = { ...order, properties: { ...order.properties, total: 250 } };
    expect(await run(example('dropped by a condition'), big)).to.deep.equal(big);
    expect(await run(example('dropped by a condition'), identify)).to.deep.equal(identify);
  });
});
