import { randomUUID } from 'node:crypto';
import { ValidationError } from 'eventrelay/internal';
import { WEBHOOKS } from './router';
import type { RouteSource } from './router';
import { snakeCase } from './snake-case';
import type { AudienceChange, NewDelivery } from '../store/contract';
import { serializeWebhookMessage, toWebhookMessage } from 'eventrelay/internal';

export interface AudienceSyncRequest {
  /** Name of the source whose destination receives the identify calls. */
  readonly source: string;
  /** Audience name; the trait is its snake_case form ("High Value Users" → `high_value_users`). */
  readonly audience: string;
  /** The userIds in the audience now (the whole membership, not a change). */
  readonly members: readonly string[];
}

export interface AudienceSyncResult {
  readonly source: string;
  readonly audience: string;
  /** The trait name sent, snake_case of the audience name. */
  readonly trait: string;
  /** True when this was the audience's first sync: every member was sent. */
  readonly firstSync: boolean;
  readonly added: number;
  readonly removed: number;
  /** Identify calls queued (0 when the source's destination is off; membership is kept all the same). */
  readonly sent: number;
}

/** Checks a sync request (not each member: see `checkMembers`); ValidationError names the bad field. */
export function checkAudienceRequest(
  request: AudienceSyncRequest,
  sources: readonly RouteSource[],
): { source: RouteSource; trait: string; members: readonly string[] } {
  const { source: name, audience, members } = request ?? ({} as AudienceSyncRequest);
  if (typeof name !== 'string' || name === '') throw new ValidationError('Expected `source` to be a source name', 'source');
  const source = sources.find((s) => s.name === name);
  if (source === undefined) {
    throw new ValidationError(`Unknown source ${JSON.stringify(name)}; the sources are ${sources.map((s) => JSON.stringify(s.name)).join(', ')}`, 'source');
  }
  if (typeof audience !== 'string') throw new ValidationError('Expected `audience` to be the audience name (a string)', 'audience');
  const trait = snakeCase(audience);
  if (!Array.isArray(members)) throw new ValidationError('Expected `members` to be a list of userIds (strings)', 'members');
  return { source, trait, members };
}

/** Members checked between two turns of the event loop. */
const CHECK_CHUNK = 50_000;

/**
 * Checks every member is a userId (a non-empty string), letting the event loop run between
 * chunks; repeats are fine (the store counts each user once).
 */
export async function checkMembers(members: readonly unknown[]): Promise<void> {
  for (let start = 0; start < members.length; start += CHECK_CHUNK) {
    const end = Math.min(members.length, start + CHECK_CHUNK);
    for (let i = start; i < end; i++) {
      const m = members[i];
      if (typeof m !== 'string' || m === '') throw new ValidationError(`Expected \`members[${i}]\` to be a userId (a non-empty string)`, `members[${i}]`);
    }
    if (end < members.length) await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Spec 6: an identify per user added to (trait true) or removed from (trait false) the audience.
 * The first sync adds everyone. Each identify has its own messageId.
 */
export function planAudienceNotices(source: RouteSource, trait: string, change: AudienceChange, now: number): NewDelivery[] {
  // No URL whose filter takes identify calls: nothing to send (the membership is kept all the same).
  if (!source.webhooksOn || (source.rules !== undefined && !source.rules.routed('identify', undefined))) return [];
  const notice = (userId: string, member: boolean): NewDelivery => {
    const messageId = randomUUID();
    const webhook = toWebhookMessage({ type: 'identify', userId, traits: { [trait]: member }, messageId }, { receivedAt: now });
    return { source: source.name, destination: WEBHOOKS, kind: 'audience', messageId, body: serializeWebhookMessage(webhook), createdAt: now };
  };
  return [...change.added.map((id) => notice(id, true)), ...change.removed.map((id) => notice(id, false))];
}
