import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import fc from 'fast-check';
import { gzip, utf8ByteLength } from '../../../src/client/encoding';

describe('utf8ByteLength', () => {
  it('counts what Buffer.byteLength counts, without encoding', () => {
    for (const text of ['', 'abc', 'é', '€', '😀', 'a😀é€', '\ud83d', '\ude00x', '\ud83d\ud83d\ude00']) {
      expect(utf8ByteLength(text), JSON.stringify(text)).to.equal(Buffer.byteLength(text));
    }
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => utf8ByteLength(text) === Buffer.byteLength(text)), { numRuns: 200 });
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (text) => utf8ByteLength(text) === Buffer.byteLength(text)), { numRuns: 200 });
  });
});

describe('gzip (CompressionStream)', () => {
  it('makes a gzip stream of the UTF-8 bytes', async () => {
    const text = JSON.stringify({ batch: Array.from({ length: 2000 }, (_, i) => ({ event: `Événement ${i}` })) });
    const zipped = await gzip(text);
    expect(zipped).to.be.instanceOf(Uint8Array);
    expect(zipped.byteLength).to.be.below(Buffer.byteLength(text));
    expect(gunzipSync(zipped).toString('utf8')).to.equal(text);
    expect(gunzipSync(await gzip('')).toString('utf8')).to.equal('');
  });
});
