/**
 * The webhook message types, defined once in `src/messages/webhook.ts` (the forwarder builds
 * them from the same definition) and re-exported here for the receiver helper.
 */
export { WEBHOOK_MESSAGE_TYPES } from '../messages/webhook';
export type {
  WebhookAliasMessage,
  WebhookContext,
  WebhookDeleteMessage,
  WebhookGroupMessage,
  WebhookIdentifyMessage,
  WebhookMessage,
  WebhookMessageType,
  WebhookPageMessage,
  WebhookPageProperties,
  WebhookProperties,
  WebhookScreenMessage,
  WebhookTrackMessage,
  WebhookTraits,
} from '../messages/webhook';
