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

  it('agrees with the grammar written as a regular expression on every single-character change of valid forms', () => {
    // The reading is by hand (no regular expression on the hot path): the grammar is the oracle.
    const grammar = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
    const inRange = (m: RegExpExecArray): boolean => {
      const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i]));
      const leap = (year! % 4 === 0 && year! % 100 !== 0) || year! % 400 === 0;
      const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month! - 1] ?? 0;
      return month! >= 1 && day! >= 1 && day! <= days && hour! <= 23 && minute! <= 59 && second! <= 60 && Number(m[7] ?? 0) <= 23 && Number(m[8] ?? 0) <= 59;
    };
    const oracle = (value: string) => {
      const m = grammar.exec(value);
      return m !== null && inRange(m);
    };
    const alphabet = ['0', '1', '2', '3', '5', '6', '9', '-', ':', '.', '+', 'T', 't', 'Z', 'z', ' ', 'x', '\u0660'];
    let checked = 0;
    for (const base of [...valid, '2024-02-29T00:00:00Z', '2023-02-29T00:00:00Z', '0000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999999Z']) {
      const variants = new Set<string>([base, base.slice(0, -1), `${base}0`]);
      for (let i = 0; i < base.length; i++) {
        variants.add(base.slice(0, i) + base.slice(i + 1));
        for (const c of alphabet) {
          variants.add(base.slice(0, i) + c + base.slice(i + 1));
          variants.add(base.slice(0, i) + c + base.slice(i));
        }
      }
      for (const value of variants) {
        expect(isTimestamp(value), value).to.equal(oracle(value));
        checked++;
      }
    }
    expect(checked).to.be.greaterThan(5000);
  });
});
