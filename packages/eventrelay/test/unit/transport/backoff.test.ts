import { expect } from 'chai';
import { backoffDelay, parseRetryAfter } from '../../../src/transport/backoff';

describe('backoffDelay', () => {
  const options = { minDelay: 100, maxDelay: 10_000 };

  it('doubles the nominal delay each attempt, jittered between half and all of it', () => {
    expect(backoffDelay(1, options, () => 0)).to.equal(50);
    expect(backoffDelay(1, options, () => 1)).to.equal(100);
    expect(backoffDelay(3, options, () => 0)).to.equal(200);
    expect(backoffDelay(3, options, () => 1)).to.equal(400);
  });

  it('never waits longer than maxDelay', () => {
    expect(backoffDelay(30, options, () => 1)).to.equal(10_000);
  });

  it('honours Retry-After as a lower bound, capped at maxDelay', () => {
    expect(backoffDelay(1, options, () => 0, 3000)).to.equal(3000);
    expect(backoffDelay(1, options, () => 0, 60_000)).to.equal(10_000);
    expect(backoffDelay(5, options, () => 1, 10)).to.equal(1600);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter('3')).to.equal(3000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now)).to.equal(10_000);
    expect(parseRetryAfter(['2', '5'])).to.equal(2000);
  });

  it('ignores what it does not understand', () => {
    expect(parseRetryAfter(undefined)).to.equal(undefined);
    expect(parseRetryAfter('')).to.equal(undefined);
    expect(parseRetryAfter('soon')).to.equal(undefined);
    expect(parseRetryAfter('-1')).to.equal(undefined);
  });
});
