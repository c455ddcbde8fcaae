import { describe, it } from 'mocha';
import { expect } from 'chai';
import { nextAttemptAt } from '../../packages/forwarder/src/delivery/retry-schedule';
import { CONFIG_DEFAULTS } from '../../packages/forwarder/src/config';
import { readDoc, section } from './markdown';

const { minRetryDelay, maxRetryDelay, retryWindow, timeout } = CONFIG_DEFAULTS.delivery;
/** The jitter at its ends: the shortest and the longest delay the schedule draws. */
const SHORTEST = () => 0;
const LONGEST = () => 1 - Number.EPSILON;

/** The start times of every attempt in the window, from 0, when each attempt takes `duration` ms. */
function attempts(random: () => number, duration = 0): number[] {
  const times = [0];
  for (let attempt = 1; ; attempt++) {
    const now = times.at(-1)! + duration;
    const next = nextAttemptAt({ attempt, firstAttemptAt: 0, now, retryWindow, minDelay: minRetryDelay, maxDelay: maxRetryDelay, random });
    if (next === undefined) return times;
    times.push(next);
  }
}

/** "0.5 – 1 s" → [500, 1000]. */
function range(cell: string): [number, number] {
  const match = /^([\d.]+) – ([\d.]+) s$/.exec(cell.trim());
  expect(match, cell).to.not.equal(null);
  return [Number(match![1]) * 1000, Number(match![2]) * 1000];
}

describe('the retry schedule in docs/operating-the-forwarder.md', () => {
  const text = section(readDoc('docs/operating-the-forwarder.md'), '### The retry schedule');
  const rows = text
    .split('\n')
    .filter((line) => /^\| (\d+|11 and later) \|/.test(line))
    .map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
  const shortest = attempts(SHORTEST);
  const longest = attempts(LONGEST);

  it('states the delay before each retry and its time since the first attempt, as nextAttemptAt computes them', () => {
    expect(rows.map((r) => r[0])).to.deep.equal(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11 and later']);
    for (const [retry, waits, since] of rows.slice(0, 10)) {
      const n = Number(retry);
      expect(range(waits!), `retry ${n} waits`).to.deep.equal([shortest[n]! - shortest[n - 1]!, longest[n]! - longest[n - 1]!]);
      expect(range(since!), `retry ${n} since the first`).to.deep.equal([shortest[n]!, longest[n]!]);
    }
    const [, waits, since] = rows[10]!;
    expect(range(waits!)).to.deep.equal([maxRetryDelay / 2, maxRetryDelay]);
    for (let n = 11; n < shortest.length; n++) expect(shortest[n]! - shortest[n - 1]!).to.equal(maxRetryDelay / 2);
    for (let n = 11; n < longest.length; n++) expect(longest[n]! - longest[n - 1]!).to.equal(maxRetryDelay);
    expect(since).to.equal('every 5 to 10 minutes, until 4 h');
  });

  it('states how many attempts fit in the 4 hours, with quick answers and with every attempt timing out', () => {
    const [, fewest, most] = /In all, (\d+) to (\d+) attempts in the 4 hours when the receiver answers at once/.exec(text) ?? [];
    expect([Number(fewest), Number(most)]).to.deep.equal([longest.length, shortest.length]);
    const [, fewestSlow, mostSlow] = /(\d+) to (\d+) when\s+every attempt waits out the 5 s timeout/.exec(text) ?? [];
    expect([Number(fewestSlow), Number(mostSlow)]).to.deep.equal([attempts(LONGEST, timeout).length, attempts(SHORTEST, timeout).length]);
    expect(Math.max(...shortest, ...longest)).to.be.at.most(retryWindow);
  });
});
