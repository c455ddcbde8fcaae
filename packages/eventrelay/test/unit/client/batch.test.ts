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
});
