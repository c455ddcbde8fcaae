import { describe, it } from 'mocha';
import { expect } from 'chai';
import { formatAge, statusLine } from '../../../src/cli/status-line';

describe('CLI status line', () => {
  it('formats ages for people', () => {
    expect(formatAge(850)).to.equal('850 ms');
    expect(formatAge(12_340)).to.equal('12.3 s');
    expect(formatAge(4 * 60_000)).to.equal('4 min');
    expect(formatAge(2.5 * 3600_000)).to.equal('2.5 h');
  });

  it('shows the counts in one line', () => {
    const line = statusLine({
      accepted: 10, duplicates: 1, refused: 0, delivered: 7, retrying: 2, failed: 1, queueDepth: 2, oldestPendingAge: 1500, inFlight: 1,
      endpoints: [], uptime: 5,
    });
    expect(line).to.equal('accepted 10 | delivered 7 | retrying 2 | failed 1 | queue 2 (oldest 1.5 s) | in flight 1');
    expect(line).not.to.contain('\n');
    expect(statusLine({ accepted: 0, duplicates: 0, refused: 0, delivered: 0, retrying: 0, failed: 0, queueDepth: 0, oldestPendingAge: null, inFlight: 0, endpoints: [], uptime: 0 })).to.contain('queue 0 (oldest -)');
  });
});
