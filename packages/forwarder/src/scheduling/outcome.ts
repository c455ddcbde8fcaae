import createDebug from 'debug';
import type { Clock } from 'eventrelay/internal';
import { exhaustedNotice, NOTIFY_SOURCE } from '../delivery/notify';
import type { Notice } from '../delivery/notify';
import type { AttemptReport } from './report';

const log = createDebug('eventrelay:forwarder');

/** What the scheduler hands each written outcome to: the outcome step it was built with. */
export interface OutcomeStep {
  /** An attempt's outcome was written (or could not be): its report, without the body. */
  recorded(report: AttemptReport): void;
}

/** Where a finished attempt is told: the delivery log and metrics (`Operations`), the operator's log. */
export interface AttemptLog {
  attempt(report: AttemptReport): void;
}

/** The `attempt` event of the forwarder (its `EventEmitter`). */
export interface AttemptEvents {
  emit(event: 'attempt', report: AttemptReport): boolean;
}

/** Where the operator's notices go (`Notices`): the `endpoint` event, the log and, with `notify`, a queued delivery. */
export interface NoticeSender {
  send(notice: Notice): void;
}

/**
 * The last step of a batch's path, once its attempt's outcome is written: the delivery log and
 * metrics, the operator's log, the `attempt` event, and a `delivery.exhausted` notice for a
 * delivery given up. A notice's own attempts are only logged (never noticed again). Built by the
 * lifecycle once the store is open, and handed to the scheduler it serves.
 */
export class Outcome implements OutcomeStep {
  constructor(
    private readonly deliveryLog: AttemptLog,
    private readonly operatorLog: AttemptLog,
    private readonly events: AttemptEvents,
    private readonly notices: NoticeSender,
    private readonly clock: Clock,
  ) {}

  recorded(report: AttemptReport): void {
    if (report.source === NOTIFY_SOURCE) {
      log('notice %s: attempt %d %s', report.messageId, report.result.attempt, report.result.status);
      return;
    }
    if (report.kind === 'batch') {
      // A batch's request: its URL's answer (health, metrics, endpoint states), once. Each call in
      // it comes with a report of its own: the log lines, the events and the notices are theirs.
      this.deliveryLog.attempt(report);
      if (report.result.outcomes.length > 0) this.operatorLog.attempt(report);
      return;
    }
    this.deliveryLog.attempt(report);
    // Nothing sent (waiting for a rate limit's slot, closing): not an attempt.
    if (report.result.outcomes.length === 0) return;
    this.operatorLog.attempt(report);
    this.events.emit('attempt', report);
    if (report.result.status === 'failed') this.notices.send(exhaustedNotice(report.source, report.messageId, report.result, this.clock.now()));
  }
}
