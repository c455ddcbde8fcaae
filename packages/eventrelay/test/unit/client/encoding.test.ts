import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import fc from 'fast-check';
import { countUtf8Bytes, gzip, utf8ByteLength } from '../../../src/client/encoding';

describe('countUtf8Bytes (the byte length where there is no Buffer)', () => {
  it('counts what Buffer.byteLength counts, without encoding', () => {
    for (const text of ['', 'abc', 'é', '€', '😀', 'a😀é€', '\ud83d', '\ude00x', '\ud83d\ud83d\ude00']) {
      expect(countUtf8Bytes(text), JSON.stringify(text)).to.equal(Buffer.byteLength(text));
      expect(utf8ByteLength(text), JSON.stringify(text)).to.equal(Buffer.byteLength(text));
    }
    // Any UTF-16 units (lone surrogates included), and any code points (astral ones as pairs).
    const units = fc.array(fc.integer({ min: 0, max: 0xffff })).map((codes) => String.fromCharCode(...codes));
    const points = fc.array(fc.integer({ min: 0, max: 0x10ffff })).map((codes) => String.fromCodePoint(...codes));
    for (const strings of [units, points]) {
      fc.assert(fc.property(strings, (text) => countUtf8Bytes(text) === Buffer.byteLength(text)), { numRuns: 300 });
    }
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
