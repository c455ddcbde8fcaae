import type { AttemptResult } from './destination';
import type { EndpointChange } from './endpoint-guard';

/**
 * The queue's source name of notices: no source of the config file or the admin API can have it
 * (names hold no control character), so notices never mix with a source's deliveries.
 */
export const NOTIFY_SOURCE = '\u0001notify';

/** What a notice tells the operator. */
export type NoticeType = 'endpoint.disabled' | 'endpoint.enabled' | 'delivery.exhausted';

/**
 * A notice for the operator: emitted as the forwarder's `endpoint` event, and POSTed (signed) to
 * `notify.url` when one is configured.
 */
export interface Notice {
  readonly type: NoticeType;
  readonly source: string;
  /** The webhook URL, without credentials or query. */
  readonly url: string;
  /** When it happened, ISO 8601. */
  readonly at: string;
  /** The URL's last error (status or error code, and text), or null. */
  readonly lastError: string | null;
  /** `endpoint.disabled`: why, in words. */
  readonly reason?: string;
  /** `delivery.exhausted`: the message's id (for a deletion notice, its random id). */
  readonly messageId?: string;
  /** `delivery.exhausted`: the attempts made. */
  readonly attempts?: number;
}

/** The notice of a URL this instance disabled or enabled. */
export function endpointNotice(change: EndpointChange): Notice {
  const { state } = change;
  return {
    type: change.type,
    source: state.source,
    url: state.url,
    at: new Date(change.at).toISOString(),
    lastError: state.lastError ?? null,
    ...(change.type === 'endpoint.disabled' && state.disabledReason !== undefined ? { reason: state.disabledReason } : {}),
  };
}

/** The notice of a delivery given up: the retry window ran out, or a final status (a 4xx, say). */
export function exhaustedNotice(source: string, messageId: string, result: Extract<AttemptResult, { status: 'failed' }>, at: number): Notice {
  return {
    type: 'delivery.exhausted',
    source,
    url: result.outcomes[0]?.url ?? '',
    at: new Date(at).toISOString(),
    lastError: result.reason,
    messageId,
    attempts: result.attempt,
  };
}
