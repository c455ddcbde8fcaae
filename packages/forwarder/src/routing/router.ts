import type { ValidMessage } from './ingest';
import { isDestinationEnabled } from '../delivery/integrations';
import type { AcceptedMessage, IngestRateLimit, NewDelivery } from '../store/contract';
import type { AllowedOrigins } from './origins';

/** The destination key of spec 4.3, and the only destination kind of the forwarder. */
export const WEBHOOKS = 'Webhooks';

/** What routing needs to know about a source. */
export interface RouteSource {
  readonly name: string;
  /**
   * The source's `SourceRecord.id`, which the store checks its calls against; absent while the
   * source is not in the store yet (the config file's, before the store opens).
   */
  readonly id?: string;
  /** True when the source has a Webhooks destination switched on. */
  readonly webhooksOn: boolean;
  /** True when its Webhooks destination delivers in order per user (`ordering: "user"`). */
  readonly ordered?: boolean;
  /** Browser origins it takes calls from; absent: none (a request with an `Origin` is refused). */
  readonly origins?: AllowedOrigins;
  /** Its ingestion limit; absent: none. */
  readonly ingestRateLimit?: IngestRateLimit;
}

/**
 * The user key a call is ordered by (`ordering: "user"`): its `userId`, else its `anonymousId`
 * (the webhook's `userId` holds whichever it had); for an alias its `previousId`, so that the alias
 * follows the old id's calls. Read from the webhook body, so that a replay finds the same key.
 */
export function orderKeyOf(webhook: Readonly<Record<string, unknown>>): string | undefined {
  const id = webhook.type === 'alias' ? webhook['Previous ID'] : webhook.userId;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * Routes a valid message of a source: one delivery to the source's Webhooks destination when it
 * is on and the message's `integrations` do not turn it off (spec 4.3). The webhook body was
 * serialized once by ingestion; the store keeps that string and every attempt sends it as is.
 */
export function routeMessage(source: RouteSource, message: ValidMessage, receivedAt: number): AcceptedMessage {
  const deliveries: NewDelivery[] = [];
  if (source.webhooksOn && isDestinationEnabled(message.integrations, WEBHOOKS)) {
    deliveries.push({
      source: source.name,
      destination: WEBHOOKS,
      kind: 'message',
      messageId: message.messageId,
      body: message.body,
      createdAt: receivedAt,
      orderKey: source.ordered === true ? orderKeyOf(message.webhook as unknown as Readonly<Record<string, unknown>>) : undefined,
    });
  }
  return { source: source.name, messageId: message.messageId, receivedAt, deliveries };
}
