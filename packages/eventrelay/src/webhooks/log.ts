import createDebug from 'debug';

/**
 * `DEBUG=analytics:webhooks` (or `analytics:*`). Logs statuses, message types, sizes and
 * durations; never secrets, signatures or bodies.
 */
export const log = createDebug('analytics:webhooks');
