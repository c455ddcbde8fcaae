import { expect } from 'chai';
import fc from 'fast-check';
import { crc32 as zlibCrc32 } from 'node:zlib';
import {
  FILE_HEADER_BYTES,
  FORMAT_VERSION,
  checkHeader,
  crc32,
  encodeAcks,
  encodeMessages,
  fileHeader,
  messageRecordBytes,
  scanRecords,
} from '../../../src/client/spool/format';

const entry = (json: string, time = 1_700_000_000_000) => ({ json, bytes: Buffer.byteLength(json), time });

/** A segment file holding `jsons` as message records, and the offset of each. */
function segmentOf(jsons: readonly string[]): { file: Buffer; offsets: number[] } {
  const entries = jsons.map((json, i) => entry(json, 1_700_000_000_000 + i));
  const total = entries.reduce((sum, e) => sum + messageRecordBytes(e.bytes), 0);
  const offsets: number[] = [];
  let at = FILE_HEADER_BYTES;
  for (const e of entries) {
    offsets.push(at);
    at += messageRecordBytes(e.bytes);
  }
  return { file: Buffer.concat([fileHeader(), encodeMessages(entries, total, crc32)]), offsets };
}

describe('spool file format', () => {
  it('computes the same CRC-32 as zlib', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(crc32(bytes)).to.equal(zlibCrc32(bytes));
      }),
    );
  });

  it('reads back every message, its JSON byte for byte and its accepted time, in order', () => {
    const jsons = ['{"type":"track","messageId":"a"}', '{"event":"café ✓ 😀"}', '{"u":"\\u2028"}'];
    const { file, offsets } = segmentOf(jsons);
    const scan = scanRecords(file, crc32);
    expect(scan.damage).to.deep.equal([]);
    expect(scan.end).to.equal(file.length);
    expect(scan.messages.map((m) => m.json)).to.deep.equal(jsons);
    expect(scan.messages.map((m) => m.offset)).to.deep.equal(offsets);
    expect(scan.messages.map((m) => m.bytes)).to.deep.equal(jsons.map((j) => Buffer.byteLength(j)));
    expect(scan.messages.map((m) => m.time)).to.deep.equal([1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002]);
  });

  it('leaves out the messages an ack record names, and only those', () => {
    const { file, offsets } = segmentOf(['{"n":0}', '{"n":1}', '{"n":2}', '{"n":3}']);
    const acked = Buffer.concat([file, encodeAcks([offsets[0]!, offsets[2]!], crc32), encodeAcks([offsets[3]!], crc32)]);
    expect(scanRecords(acked, crc32).messages.map((m) => m.json)).to.deep.equal(['{"n":1}']);
  });

  it('counts without decoding when asked', () => {
    const { file } = segmentOf(['{"n":0}', '{"n":1}']);
    const scan = scanRecords(file, crc32, false);
    expect(scan.messages.map((m) => m.json)).to.deep.equal(['', '']);
    expect(scan.messages).to.have.length(2);
  });

  it('reports a record cut short at the end as torn, at its offset, and keeps the ones before', () => {
    const { file, offsets } = segmentOf(['{"n":0}', '{"n":1}', '{"n":2}']);
    for (let cut = offsets[2]! + 1; cut < file.length; cut++) {
      const scan = scanRecords(file.subarray(0, cut), crc32);
      expect(scan.messages.map((m) => m.json)).to.deep.equal(['{"n":0}', '{"n":1}']);
      expect(scan.damage).to.deep.equal([{ offset: offsets[2], bytes: cut - offsets[2]!, kind: 'torn' }]);
      expect(scan.end).to.equal(offsets[2]);
    }
  });

  it('skips a damaged record, reports its offset, and reads the records after it', () => {
    const { file, offsets } = segmentOf(['{"n":0}', '{"n":1}', '{"n":2}']);
    const damaged = Buffer.from(file);
    damaged[offsets[1]! + 20] = damaged[offsets[1]! + 20]! ^ 0x40; // a bit of the second message's JSON
    const scan = scanRecords(damaged, crc32);
    expect(scan.messages.map((m) => m.json)).to.deep.equal(['{"n":0}', '{"n":2}']);
    expect(scan.damage).to.deep.equal([{ offset: offsets[1], bytes: offsets[2]! - offsets[1]!, kind: 'corrupt' }]);
  });

  it('loses nothing but the record a flipped byte or a cut falls in (property)', () => {
    const json = fc.string({ maxLength: 60 }).map((s) => JSON.stringify({ s }));
    fc.assert(
      fc.property(fc.array(json, { minLength: 1, maxLength: 12 }), fc.nat(), fc.integer({ min: 1, max: 255 }), fc.boolean(), (jsons, where, flip, cut) => {
        const { file, offsets } = segmentOf(jsons);
        const position = FILE_HEADER_BYTES + (where % (file.length - FILE_HEADER_BYTES));
        const hit = offsets.filter((o) => o <= position).length - 1;
        const changed = cut ? file.subarray(0, position) : Buffer.from(file);
        if (!cut) changed[position] = changed[position]! ^ flip;
        const expected = jsons.filter((_, i) => (cut ? i < hit : i !== hit));
        const scan = scanRecords(changed, crc32);
        expect(scan.messages.map((m) => m.json)).to.deep.equal(expected);
        // A cut right at a record's start leaves whole records only.
        const clean = cut && position === offsets[hit];
        expect(scan.damage.map((d) => d.offset)).to.deep.equal(clean ? [] : [offsets[hit]]);
      }),
      { numRuns: 300 },
    );
  });

  it('tells its own header from a newer version, a header cut short and a file that is not a spool file', () => {
    expect(checkHeader(fileHeader())).to.deep.equal({ kind: 'ok' });
    expect(checkHeader(fileHeader(FORMAT_VERSION + 1))).to.deep.equal({ kind: 'newer', version: FORMAT_VERSION + 1 });
    expect(checkHeader(fileHeader().subarray(0, 3))).to.deep.equal({ kind: 'short' });
    expect(checkHeader(Buffer.alloc(0))).to.deep.equal({ kind: 'short' });
    expect(checkHeader(Buffer.from('{"not":"a spool"}'))).to.deep.equal({ kind: 'foreign' });
    expect(checkHeader(Buffer.from('xy'))).to.deep.equal({ kind: 'foreign' });
  });

  it('splits a long list of acks over several records that all read back', () => {
    const offsets = Array.from({ length: 300_000 }, (_, i) => FILE_HEADER_BYTES + i * 4);
    const acks = encodeAcks(offsets, zlibCrc32);
    const scan = scanRecords(Buffer.concat([fileHeader(), acks]), zlibCrc32);
    expect(scan.damage).to.deep.equal([]);
    expect(scan.end).to.equal(FILE_HEADER_BYTES + acks.length);
  });
});
