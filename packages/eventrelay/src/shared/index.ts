/**
 * `eventrelay/internal`: what `@eventrelay/forwarder` shares with the SDK, loaded from the SDK's
 * own build so that messages, their rules, the webhook shapes, signing and the error classes
 * exist once. Not a public API: it follows the forwarder's needs, not semver.
 */
export * from '../errors';
export * from '../clock';
export * from '../version';
export * from '../internal/headers';
export * from '../internal/hmac';
export * from '../internal/node-body';
export * from '../internal/opentelemetry';
export * from '../internal/options';
export * from '../internal/trace-context';
export * from '../internal/values';
export * from '../messages/calls';
export * from '../messages/event-time';
export * from '../messages/limits';
export * from '../messages/rules';
export * from '../messages/webhook';
export * from '../transport/backoff';
export * from '../transport/network-errors';
export * from '../transport/node';
export * from '../transport/node-builtins';
export * from '../transport/redact';
export * from '../transport/transport';
export * from '../webhooks/schemes/standard-webhooks';
