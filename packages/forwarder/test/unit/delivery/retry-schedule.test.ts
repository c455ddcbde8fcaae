import { describe, it } from 'mocha';
import { expect } from 'chai';
import { nextAttemptAt } from '../../../src/delivery/retry-schedule';

const HOUR = 3_600_000;
const base = { firstAttemptAt: 1_000_000, retryWindow: 4 * HOUR, minDelay: 1000, maxDelay: 600_000 };

describe('nextAttemptAt', () => {
  it('grows exponentially with jitter between half and all of the nominal delay', () => {
    const low = () => 0;
    const high = () => 0.999999;
    const now = base.firstAttemptAt;
    expect(nextAttemptAt({ ...base, attempt: 1, now, random: low })).to.equal(now + 500);
    expect(nextAttemptAt({ ...base, attempt: 1, now, random: high })).to.equal(now + 1000);
    expect(nextAttemptAt({ ...base, attempt: 3, now, random: low })).to.equal(now + 2000);
    expect(nextAttemptAt({ ...base, attempt: 3, now, random: high })).to.equal(now + 4000);
  });

  it('caps the delay at maxDelay', () => {
    const now = base.firstAttemptAt + HOUR;
    expect(nextAttemptAt({ ...base, attempt: 30, now, random: () => 0.999999 })).to.equal(now + 600_000);
  });

  it('honours Retry-After as a lower bound', () => {
    const now = base.firstAttemptAt;
    expect(nextAttemptAt({ ...base, attempt: 1, now, random: () => 0, retryAfter: 30_000 })).to.equal(now + 30_000);
  });

  it('returns undefined once the next attempt would fall after the 4-hour window', () => {
    const deadline = base.firstAttemptAt + 4 * HOUR;
    const random = () => 0.999999;
    expect(nextAttemptAt({ ...base, attempt: 20, now: deadline - 600_000, random })).to.equal(deadline);
    expect(nextAttemptAt({ ...base, attempt: 20, now: deadline - 599_999, random })).to.equal(undefined);
    expect(nextAttemptAt({ ...base, attempt: 2, now: deadline, random: () => 0 })).to.equal(undefined);
  });

  it('covers a 4-hour window with a bounded number of attempts', () => {
    let now = base.firstAttemptAt;
    let attempts = 1;
    for (;;) {
      const next = nextAttemptAt({ ...base, attempt: attempts, now, random: () => 0.5 });
      if (next === undefined) break;
      expect(next).to.be.greaterThan(now);
      now = next;
      attempts++;
    }
    expect(now).to.be.at.most(base.firstAttemptAt + 4 * HOUR);
    expect(now).to.be.greaterThan(base.firstAttemptAt + 4 * HOUR - 600_000);
    expect(attempts).to.be.within(20, 60);
  });
});
