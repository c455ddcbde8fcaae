import { randomUUID } from 'node:crypto';
import { ValidationError } from 'eventrelay/internal';
import { WEBHOOKS } from './router';
import type { RouteSource } from './router';
import type { NewDelivery } from '../store/contract';
import { serializeWebhookMessage, toWebhookMessage } from 'eventrelay/internal';

export interface DeletionRequest {
  /** The user whose data is to be deleted. */
  readonly userId: string;
  /** Names of the affected sources. Default: every source. */
  readonly sources?: readonly string[];
}

export interface DeletionPlan {
  readonly userId: string;
  /** Sources that get a `delete` notification (their Webhooks destination is on). */
  readonly notified: readonly string[];
  /** Affected sources that get none: no Webhooks destination switched on, or every URL's `filter` leaves `delete` out. */
  readonly skipped: readonly string[];
  readonly deliveries: readonly NewDelivery[];
}

/**
 * Spec 1 and 6: a deletion request sends one `delete` notification to each affected source
 * whose destination is on, to each of its URLs whose `filter` does not leave `delete` out. The notice is `{ type, userId, timestamp }` and nothing else, so it
 * carries no messageId; receivers deduplicate retried notices by (userId, timestamp).
 */
export function planDeletion(request: DeletionRequest, sources: readonly RouteSource[], now: number): DeletionPlan {
  const { userId } = request ?? {};
  if (typeof userId !== 'string' || userId === '') {
    throw new ValidationError('Expected `userId` to be a non-empty string', 'userId');
  }
  let affected = sources;
  if (request.sources !== undefined) {
    if (!Array.isArray(request.sources) || request.sources.some((name) => typeof name !== 'string')) {
      throw new ValidationError('Expected `sources` to be a list of source names', 'sources');
    }
    const unknown = request.sources.filter((name) => !sources.some((s) => s.name === name));
    if (unknown.length > 0) {
      throw new ValidationError(`Unknown source ${JSON.stringify(unknown[0])}; the sources are ${sources.map((s) => JSON.stringify(s.name)).join(', ')}`, 'sources');
    }
    affected = sources.filter((s) => request.sources!.includes(s.name));
  }
  const body = serializeWebhookMessage(toWebhookMessage({ type: 'delete', userId }, { receivedAt: now }));
  // Each URL whose filter takes `delete` gets it (the destination applies the filters per URL).
  const takes = (s: RouteSource) => s.webhooksOn && (s.rules === undefined || s.rules.routed('delete', undefined));
  const on = affected.filter(takes);
  return {
    userId,
    notified: on.map((s) => s.name),
    skipped: affected.filter((s) => !takes(s)).map((s) => s.name),
    deliveries: on.map((s) => ({ source: s.name, destination: WEBHOOKS, kind: 'delete', messageId: randomUUID(), body, createdAt: now })),
  };
}
