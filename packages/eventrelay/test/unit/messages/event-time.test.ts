import { expect } from 'chai';
import fc from 'fast-check';
import { eventTimeMs, eventTimestamp, isoTimestamp, MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS, timestampMs } from '../../../src/messages/event-time';

const iso = (value: unknown) => {
  const ms = timestampMs(value);
  return ms === undefined ? undefined : isoTimestamp(ms);
};

describe('event time', () => {
  it('reads RFC 3339 strings into YYYY-MM-DDTHH:mm:ss.sssZ: offsets, lowercase t and z, a leap second', () => {
    expect(iso('2026-03-01T12:34:56+02:00')).to.equal('2026-03-01T10:34:56.000Z');
    expect(iso('2016-12-31t23:59:59z')).to.equal('2016-12-31T23:59:59.000Z');
    // A leap second is the last instant of its minute.
    expect(iso('2016-12-31T23:59:60Z')).to.equal('2016-12-31T23:59:59.999Z');
  });

  it('refuses what the receiver could not parse or what leaves years 0000-9999 in UTC', () => {
    for (const value of ['2020-01-01', '2020-01-01 00:00:00Z', 'Jan 1 2020', 1_600_000_000_000, new Date(Number.NaN), new Date(MAX_TIMESTAMP_MS + 1)]) {
      expect(timestampMs(value), String(value)).to.equal(undefined);
    }
    expect(iso(new Date(MIN_TIMESTAMP_MS))).to.equal('0000-01-01T00:00:00.000Z');
    expect(iso(new Date(MAX_TIMESTAMP_MS))).to.equal('9999-12-31T23:59:59.999Z');
  });

  it('prefers timestamp, then originalTimestamp corrected with sentAt, then the time of receipt', () => {
    const receivedAt = Date.parse('2026-05-01T10:00:00.000Z');
    const sentAt = '2026-05-01T10:00:30.000Z';
    const originalTimestamp = '2026-05-01T10:00:20.000Z';
    expect(isoTimestamp(eventTimeMs({ timestamp: '2020-01-01T00:00:00Z', originalTimestamp }, { receivedAt, sentAt }))).to.equal('2020-01-01T00:00:00.000Z');
    expect(isoTimestamp(eventTimeMs({ originalTimestamp }, { receivedAt, sentAt }))).to.equal('2026-05-01T09:59:50.000Z');
    expect(isoTimestamp(eventTimeMs({ originalTimestamp }, { receivedAt, sentAt: 'not a date' }))).to.equal('2026-05-01T10:00:20.000Z');
    expect(eventTimeMs({}, { receivedAt, sentAt })).to.equal(receivedAt);
  });

  it('falls back to originalTimestamp when the correction would leave the range', () => {
    const receivedAt = Date.parse('2026-05-01T10:00:00.000Z');
    const ms = eventTimeMs({ originalTimestamp: '0000-01-01T00:00:00Z' }, { receivedAt, sentAt: '9999-01-01T00:00:00Z' });
    expect(ms).to.equal(MIN_TIMESTAMP_MS);
  });

  it('eventTimestamp is isoTimestamp(eventTimeMs(...)), for timestamps in the webhook form too', () => {
    const receivedAt = Date.parse('2026-05-01T10:00:00.000Z');
    const sentAt = '2026-05-01T10:00:30.000Z';
    const timestamps = [
      '2026-03-01T12:34:56.789Z',
      '0000-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
      '2016-12-31T23:59:60.000Z', // a leap second: not its own webhook form
      '2016-12-31T23:59:60.500Z',
      '2026-03-01t12:34:56.789z',
      '2026-03-01T12:34:56.789+02:00',
      '2026-02-30T12:34:56.789Z',
      '2026-03-01T12:34:56.7890',
      undefined,
    ];
    for (const timestamp of timestamps) {
      for (const message of [{ timestamp }, { timestamp, originalTimestamp: '2026-05-01T10:00:20.000Z' }]) {
        const options = { receivedAt, sentAt };
        // Twice: the second reading of a string comes from timestampMs's memory of the last one.
        for (let i = 0; i < 2; i++) expect(eventTimestamp(message, options), String(timestamp)).to.equal(isoTimestamp(eventTimeMs(message, options)));
      }
    }
    expect(eventTimestamp({ timestamp: '2016-12-31T23:59:60.000Z' }, { receivedAt })).to.equal('2016-12-31T23:59:59.999Z');
  });

  it('reads a string the same however often in a row, and a different one after it', () => {
    expect(timestampMs('2026-03-01T12:34:56.789Z')).to.equal(Date.parse('2026-03-01T12:34:56.789Z'));
    expect(timestampMs('2026-03-01T12:34:56.789Z')).to.equal(Date.parse('2026-03-01T12:34:56.789Z'));
    expect(timestampMs('2026-02-30T12:34:56.789Z')).to.equal(undefined);
    expect(timestampMs('2026-02-30T12:34:56.789Z')).to.equal(undefined);
    expect(timestampMs('2026-03-02T12:34:56.789Z')).to.equal(Date.parse('2026-03-02T12:34:56.789Z'));
  });

  it('isoTimestamp is toISOString, whatever the milliseconds before it (property test)', () => {
    const instant = fc.oneof(
      fc.integer({ min: MIN_TIMESTAMP_MS, max: MAX_TIMESTAMP_MS }),
      // Runs within one second and across its edges, before and after 1970.
      fc.integer({ min: -3000, max: 3000 }),
      fc.integer({ min: 1_767_225_599_000, max: 1_767_225_601_000 }),
      fc.double({ min: -1e13, max: 1e13, noNaN: true }),
    );
    fc.assert(
      fc.property(fc.array(instant, { minLength: 1, maxLength: 30 }), (instants) => {
        for (const ms of instants) expect(isoTimestamp(ms), String(ms)).to.equal(new Date(ms).toISOString());
      }),
      { numRuns: 500 },
    );
    expect(() => isoTimestamp(Number.NaN)).to.throw(RangeError);
  });
});
