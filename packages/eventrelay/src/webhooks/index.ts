// Every error class, as from each entry point: `instanceof` works whichever one you import from.
export * from '../errors';
export { sign, verifySignature } from './schemes/signature';
export { signAsync, verifySignatureAsync } from './schemes/signature-async';
export { SIGNATURE_HEX_LENGTH } from './schemes/signature-format';
export {
  checkStandardWebhook,
  checkStandardWebhookAsync,
  signStandardWebhook,
  signStandardWebhookAsync,
  STANDARD_WEBHOOKS_TOLERANCE,
  verifyStandardWebhook,
  verifyStandardWebhookAsync,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
} from './schemes/standard-webhooks';
export type { SignStandardWebhookOptions, StandardWebhookHeaders, VerifyStandardWebhookOptions } from './schemes/standard-webhooks';
export type { SignatureHeader } from './schemes/signature-format';
export type { WebhookBody } from './body';
export type { WebhookSecret } from './secret';
export { parseWebhookMessage, parseWebhookMessages } from './parse';
export { WEBHOOK_MESSAGE_TYPES } from './message-types';
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
} from './message-types';
export { getHeader, SIGNATURE_HEADER } from './headers';
export type { HeadersLike } from './headers';
export { WEBHOOK_DEFAULTS } from './options';
export type {
  WebhookBatchHandler,
  WebhookHandler,
  WebhookHandlerContextBase,
  WebhookHandlers,
  WebhookReceiverOptions,
  WebhookScheme,
} from './options';
export { createWebhookReceiver } from './receiver';
export type { IncomingWebhook, WebhookReceiver, WebhookReceiverInternals, WebhookResponse } from './receiver';
export { createWebhookHandler } from './adapters/node';
export type { NodeWebhookContext, NodeWebhookOptions } from './adapters/node';
export { webhookMiddleware } from './adapters/express';
export { fastifyWebhook } from './adapters/fastify';
export type {
  FastifyInstanceLike,
  FastifyReplyLike,
  FastifyRequestLike,
  FastifyWebhookContext,
  FastifyWebhookOptions,
} from './adapters/fastify';
export { createFetchHandler, handleWebhookRequest } from './adapters/fetch';
export type { FetchWebhookContext, FetchWebhookOptions } from './adapters/fetch';
