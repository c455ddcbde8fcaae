import { describe, it } from 'mocha';
import { expect } from 'chai';
import { attemptEntries, parseAttemptLog } from '../../../src/store/sql-rows';
import { attempt, T0 } from './delivery-log-contract';
import type { AttemptRecord } from '../../../src/store/contract';

/** A chunk as the SQL logs append it: the line's series, then the write's entries. */
const chunk = (series: number, records: readonly AttemptRecord[]) => `[${series},${attemptEntries(records)}]`;

describe('attempt_log: the attempts a SQL log line keeps', () => {
  it('gives back every URL of every attempt with its fields, in the order written, each in the series of its write', () => {
    const retry: AttemptRecord = {
      ...attempt('m', 1, 'retry', T0 + 10),
      nextAttemptAt: T0 + 700,
      urls: [
        { url: 'https://a.test/in', status: 503, error: 'HTTP', durationMs: 12 },
        { url: 'https://b.test/"quoted"', status: null, error: 'ERR_TIMEOUT', durationMs: 5000 },
      ],
    };
    const text = [chunk(1, [retry, attempt('m', 2, 'failed', T0 + 800)]), chunk(2, [attempt('m', 1, 'delivered', T0 + 900)])].join(',');
    expect(parseAttemptLog(text)).to.deep.equal([
      { series: 1, attempt: 1, at: T0 + 10, url: 'https://a.test/in', status: 503, error: 'HTTP', durationMs: 12, outcome: 'retry', nextAttemptAt: T0 + 700, responseBody: null },
      { series: 1, attempt: 1, at: T0 + 10, url: 'https://b.test/"quoted"', status: null, error: 'ERR_TIMEOUT', durationMs: 5000, outcome: 'retry', nextAttemptAt: T0 + 700, responseBody: null },
      { series: 1, attempt: 2, at: T0 + 800, url: 'http://hooks.test/in', status: 503, error: null, durationMs: 12, outcome: 'failed', nextAttemptAt: null, responseBody: null },
      { series: 2, attempt: 1, at: T0 + 900, url: 'http://hooks.test/in', status: 200, error: null, durationMs: 12, outcome: 'delivered', nextAttemptAt: null, responseBody: null },
    ]);
  });

  it('reads a write without URLs as no attempt, and a line without attempt_log as none', () => {
    expect(parseAttemptLog([chunk(1, [{ ...attempt('m', 1, 'retry', T0), urls: [] }]), chunk(1, [attempt('m', 2, 'delivered', T0 + 1)])].join(','))).to.have.length(1);
    expect(parseAttemptLog(null)).to.deep.equal([]);
  });
});
