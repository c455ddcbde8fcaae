import { describe, it } from 'mocha';
import { expect } from 'chai';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import type { Notice } from '../../../src/delivery/notify';
import { NOTIFY_SOURCE } from '../../../src/delivery/notify';
import { Outcome } from '../../../src/scheduling/outcome';
import type { AttemptReport } from '../../../src/scheduling/queue';
import type { AttemptResult } from '../../../src/delivery/destination';

describe('Outcome: the step a written outcome goes to', () => {
  function setup() {
    const seen = { log: [] as AttemptReport[], operator: [] as AttemptReport[], events: [] as AttemptReport[], notices: [] as Notice[] };
    const outcome = new Outcome(
      { attempt: (r) => seen.log.push(r) },
      { attempt: (r) => seen.operator.push(r) },
      { emit: (_event, r) => (seen.events.push(r), true) },
      { send: (n) => seen.notices.push(n) },
      new FakeClock(),
    );
    return { outcome, seen };
  }

  function report(result: AttemptResult, source = 'web'): AttemptReport {
    return { id: 1, source, kind: 'message', messageId: 'm1', createdAt: 0, orderKey: undefined, result };
  }

  const sent = [{ url: 'http://127.0.0.1/hook', status: 500, durationMs: 1 }] as unknown as AttemptResult['outcomes'];

  it('tells the delivery log, the operator log and the attempt event of an attempt made', () => {
    const { outcome, seen } = setup();
    const r = report({ status: 'retry', attempt: 1, nextAttemptAt: 10, outcomes: sent });
    outcome.recorded(r);
    expect(seen.log).to.deep.equal([r]);
    expect(seen.operator).to.deep.equal([r]);
    expect(seen.events).to.deep.equal([r]);
    expect(seen.notices).to.deep.equal([]);
  });

  it('a delivery given up sends a delivery.exhausted notice', () => {
    const { outcome, seen } = setup();
    outcome.recorded(report({ status: 'failed', attempt: 3, reason: 'HTTP 500', outcomes: sent } as AttemptResult));
    expect(seen.notices).to.have.length(1);
    expect(seen.notices[0]!.type).to.equal('delivery.exhausted');
  });

  it('nothing sent (a rate limit, closing): only the delivery log hears of it', () => {
    const { outcome, seen } = setup();
    outcome.recorded(report({ status: 'retry', attempt: 1, nextAttemptAt: 10, outcomes: [] }));
    expect(seen.log).to.have.length(1);
    expect(seen.operator).to.deep.equal([]);
    expect(seen.events).to.deep.equal([]);
  });

  it("a notice's own attempts are never noticed or logged as deliveries", () => {
    const { outcome, seen } = setup();
    outcome.recorded(report({ status: 'failed', attempt: 3, reason: 'HTTP 500', outcomes: sent } as AttemptResult, NOTIFY_SOURCE));
    expect(seen).to.deep.equal({ log: [], operator: [], events: [], notices: [] });
  });
});
