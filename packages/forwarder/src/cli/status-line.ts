import type { ForwarderStats } from '../service';

/** A duration for people: `850 ms`, `12.3 s`, `4 min`, `2.5 h`. */
export function formatAge(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3600_000).toFixed(1)} h`;
}

/** The CLI's one-line live status. */
export function statusLine(stats: ForwarderStats): string {
  const oldest = stats.oldestPendingAge === null ? '-' : formatAge(stats.oldestPendingAge);
  return (
    `accepted ${stats.accepted} | delivered ${stats.delivered} | retrying ${stats.retrying} | failed ${stats.failed}` +
    ` | queue ${stats.queueDepth} (oldest ${oldest}) | in flight ${stats.inFlight}`
  );
}
