import { describe, it } from 'mocha';
import { expect } from 'chai';
import { UrlTransforms, type Transformed } from '../../../src/transform/urls';

describe('transforms of a destination URLs: calls asked for together', () => {
  it('run one after another, each on its own message, in the order asked; a failure is that call alone', async () => {
    const transforms = new UrlTransforms([
      { index: 0, transform: { code: 'let calls = 0; function transform(m) { if (m.fail) throw new Error("asked to fail"); return { call: ++calls, id: m.id }; }' } },
      { index: 1, transform: undefined },
    ]);
    try {
      // The first calls compile the code and warm it up (a call of 5 ms or more makes the next one
      // wait for a turn of its own): the group below finds it compiled and quick.
      for (let i = 0; i < 5; i++) await transforms.grouped('{"id":"warm"}', [0, 1]);
      const results: (Transformed | undefined)[] = [undefined, undefined, undefined];
      const asked = ['{"id":"a"}', '{"id":"b","fail":true}', '{"id":"c"}'].map((text, i) =>
        transforms.grouped(text, [0, 1]).then((done) => {
          results[i] = done;
        }),
      );
      await Promise.all(asked);
      const bodies = results.map((done) => done!.bodies[0]?.toString('utf8'));
      expect(bodies).to.deep.equal(['{"call":6,"id":"a"}', undefined, '{"call":7,"id":"c"}']);
      expect(results[1]!.failed.map((f) => f.reason)).to.deep.equal(['Error: asked to fail (line 1, column 67)']);
      // The URL without a transform gets the message as it is.
      expect(results.every((done) => done!.bodies[1] === undefined)).to.equal(true);
    } finally {
      await transforms.dispose();
    }
  });

  it('a call whose other URL\'s transform is still compiling runs the ready one once, not again with the other', async () => {
    const transforms = new UrlTransforms([
      { index: 0, transform: { code: 'let calls = 0; function transform(m) { return { call: ++calls }; }' } },
      { index: 1, transform: { code: 'function transform(m) { return { other: m.id }; }' } },
    ]);
    try {
      for (let i = 0; i < 5; i++) await transforms.grouped('{"id":"warm"}', [0]);
      const both = await transforms.grouped('{"id":"x"}', [0, 1]);
      expect(both.bodies.map((body) => body?.toString('utf8'))).to.deep.equal(['{"call":6}', '{"other":"x"}']);
      const next = await transforms.grouped('{"id":"y"}', [0]);
      expect(next.bodies[0]?.toString('utf8')).to.equal('{"call":7}');
    } finally {
      await transforms.dispose();
    }
  });
});
