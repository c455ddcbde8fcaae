export * from './errors';
export { backoffDelay, parseRetryAfter } from './transport/backoff';
export type { BackoffOptions } from './transport/backoff';
export type { Clock } from './clock';
