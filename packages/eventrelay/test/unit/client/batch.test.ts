import { expect } from 'chai';
import { Batch } from '../../../src/client/batch';

describe('Batch', () => {
  it('builds a body from the stored strings whose size it knew in advance', () => {
    const batch = new Batch(1000);
    batch.tryAdd('{"a":"é"}', Buffer.byteLength('{"a":"é"}'), 'id1', undefined);
    batch.tryAdd('{"b":2}', 7, 'id2', undefined);
    const body = batch.body(new Date('2026-01-02T03:04:05.678Z'));
    expect(body).to.equal('{"batch":[{"a":"é"},{"b":2}],"sentAt":"2026-01-02T03:04:05.678Z"}');
    expect(JSON.parse(body).batch).to.have.length(2);
    expect(Buffer.byteLength(body)).to.equal(batch.size);
  });

  it('answers full when a message would pass the byte limit, and never passes it', () => {
    const message = `"${'x'.repeat(98)}"`; // 100 bytes
    const batch = new Batch(400);
    let added = 0;
    while (batch.tryAdd(message, 100, String(added), undefined) === 'added') added++;
    expect(added).to.equal(3);
    expect(Buffer.byteLength(batch.body(new Date()))).to.be.at.most(400);
    expect(batch.length).to.equal(3);
  });

  it('keeps callbacks with their message ids, only for messages that have one', () => {
    const batch = new Batch(1000);
    const cb = () => {};
    batch.tryAdd('1', 1, 'a', undefined);
    batch.tryAdd('2', 1, 'b', cb);
    expect(batch.callbacks).to.deep.equal([{ index: 1, id: 'b', callback: cb }]);
  });

  it('sends the same body once sealed, and halves it into the same messages', () => {
    // Commas, brackets, braces, quotes and escapes inside strings: the halves must cut between messages only.
    const messages = ['{"a":"x,y"}', '{"b":"}],{[\\"","c":[1,{"d":","}]}', '{"e":"é,\\u2028"}', '"plain"', '{}'];
    const cb = () => {};
    const open = new Batch(10_000);
    const sealed = new Batch(10_000);
    messages.forEach((json, i) => {
      open.tryAdd(json, Buffer.byteLength(json), `id${i}`, i === 3 ? cb : undefined);
      sealed.tryAdd(json, Buffer.byteLength(json), `id${i}`, i === 3 ? cb : undefined);
    });
    sealed.seal();
    sealed.seal();
    const at = new Date('2026-01-02T03:04:05.678Z');
    expect(sealed.body(at)).to.equal(open.body(at));
    expect(JSON.parse(sealed.body(at)).batch).to.deep.equal(messages.map((json) => JSON.parse(json)));
    expect(sealed.length).to.equal(5);
    expect(sealed.size).to.equal(open.size);
    const [first, second] = sealed.halves((json) => Buffer.byteLength(json));
    expect(first.body(at)).to.equal(`{"batch":[${messages.slice(0, 3).join(',')}],"sentAt":"2026-01-02T03:04:05.678Z"}`);
    expect(second.body(at)).to.equal(`{"batch":[${messages.slice(3).join(',')}],"sentAt":"2026-01-02T03:04:05.678Z"}`);
    expect(second.callbacks).to.deep.equal([{ index: 0, id: 'id3', callback: cb }]);
    expect(Buffer.byteLength(first.body(at))).to.equal(first.size);
    expect(Buffer.byteLength(second.body(at))).to.equal(second.size);
  });

  it('takes no message once sealed', () => {
    const batch = new Batch(1000);
    batch.tryAdd('1', 1, 'a', undefined);
    batch.seal();
    expect(() => batch.tryAdd('2', 1, 'b', undefined)).to.throw(/after seal/);
    expect(batch.length).to.equal(1);
  });
});
