/**
 * `eventrelay/analytics-node`: the public API of Segment's classic `analytics-node` 6 on
 * eventrelay's engine. Code written for it moves over by changing the import;
 * docs/migrating-from-segment.md lists the few differences.
 */
import { Analytics } from './analytics';

export { Analytics, CLASSIC_DEFAULTS, parseDuration } from './analytics';
export type { AnalyticsNodeOptions, ClassicCallback, ClassicMessage, FlushData } from './analytics';
export * from '../../errors';
// The classic package is imported as a default export (`import Analytics from 'analytics-node'`).
export default Analytics;
