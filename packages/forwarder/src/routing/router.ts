import type { ValidMessage } from './ingest';
import { isDestinationEnabled } from '../delivery/integrations';
import { NO_URL_MATCHES } from '../schema-rules';
import type { SourceRules } from '../schema-rules';
import type { AcceptedMessage, FilteredBy, IngestRateLimit, NewDelivery } from '../store/contract';
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
  /** Its schema controls and its URLs' filters; undefined when they stop nothing. */
  readonly rules?: SourceRules | undefined;
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

/** Why a call was not routed, when no rule of the source's schema or URLs stopped it. */
export const INTEGRATIONS_OFF: FilteredBy = { rule: 'integrations', reason: 'The call’s `integrations` turn the Webhooks destination off' };
export const NO_DESTINATION: FilteredBy = { rule: 'no_destination', reason: 'The source has no Webhooks destination switched on' };

/** A track call's event name; undefined for the other types. */
export function eventOf(message: ValidMessage): string | undefined {
  if (message.type !== 'track') return undefined;
  const event = (message.webhook as { readonly event?: unknown }).event;
  return typeof event === 'string' ? event : undefined;
}

/**
 * Routes a valid message of a source: one delivery to the source's Webhooks destination when no
 * control of the source's schema blocks it, the destination is on, the message's `integrations` do
 * not turn it off (spec 4.3) and a URL's filter takes it. Otherwise no delivery, and `filtered`
 * says which rule stopped it. The webhook body was serialized once by ingestion; the store keeps
 * that string and every attempt sends it as is.
 */
export function routeMessage(source: RouteSource, message: ValidMessage, receivedAt: number): AcceptedMessage {
  const deliveries: NewDelivery[] = [];
  const rules = source.rules;
  let filtered: FilteredBy | undefined;
  let event: string | undefined;
  if (rules !== undefined) {
    event = eventOf(message);
    filtered = rules.blocked(message.type, event);
  }
  if (filtered === undefined) {
    if (!source.webhooksOn) filtered = NO_DESTINATION;
    else if (!isDestinationEnabled(message.integrations, WEBHOOKS)) filtered = INTEGRATIONS_OFF;
    else if (rules !== undefined && !rules.routed(message.type, event)) filtered = NO_URL_MATCHES;
    else {
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
  }
  return { source: source.name, messageId: message.messageId, receivedAt, deliveries, filtered };
}
