import { expect } from 'chai';
import { isTimestamp } from '../../../src/messages/timestamp';

describe('isTimestamp (RFC 3339 date-time, issue 9.12)', () => {
  const valid = [
    '2026-03-01T12:34:56.789Z',
    '2016-12-31T23:59:60Z', // a leap second (RFC 3339 section 5.7 allows second 60)
    '2016-12-31T23:59:60.5Z',
    '2017-01-01T00:59:60+01:00',
    '2026-03-01t12:34:56z', // section 5.6: "T" and "Z" may be lowercase
    '2026-03-01t12:34:56.789+02:00',
    '2026-03-01T12:34:56-00:00',
    '2026-03-01T12:34:56+23:59',
  ];
  const invalid = ['2026-03-01T12:34:61Z', '2026-03-01T12:60:00Z', '2026-03-01T12:34:56x', '2026-03-01X12:34:56Z', '2026-03-01T12:34:56+24:00', '2026-03-01T12:34:56'];
  for (const value of valid) it(`accepts ${value}`, () => expect(isTimestamp(value)).to.equal(true));
  for (const value of invalid) it(`refuses ${value}`, () => expect(isTimestamp(value)).to.equal(false));
});
