import { hash, randomBytes } from 'node:crypto';
import type { KeyOrigin, WriteKeyRecord } from '../store/contract';

/** Default time a replaced write key keeps working, in seconds (`graceSeconds`). */
export const DEFAULT_GRACE_SECONDS = 86_400;

/** Longest `graceSeconds`: 30 days. */
export const MAX_GRACE_SECONDS = 30 * 86_400;

/** Random bytes in a generated write key: 256 bits, so a digest without salt cannot be reversed. */
export const WRITE_KEY_BYTES = 32;

/** A new source's id (`SourceRecord.id`): 16 random bytes in base64url (22 characters). */
export function newSourceId(): string {
  return randomBytes(16).toString('base64url');
}

/** A new write key: `wk_` and 32 random bytes in base64url (46 characters). */
export function generateWriteKey(): string {
  return `wk_${randomBytes(WRITE_KEY_BYTES).toString('base64url')}`;
}

/**
 * What the store keeps of a key and looks it up by: its SHA-256. Looking keys up by their hash
 * also keeps the lookup time independent of how much of a guess matches.
 */
export function writeKeyDigest(key: string): string {
  // The one-shot form (Node 20.12+): no Hash object per request, whose setup cost more than the hashing.
  return hash('sha256', key, 'base64url');
}

/** The stored form of a key, made when it is issued (the key itself is not kept). */
export function keyRecord(source: string, key: string, origin: KeyOrigin, createdAt: number): WriteKeyRecord {
  return {
    id: `key_${randomBytes(6).toString('hex')}`,
    source,
    digest: writeKeyDigest(key),
    last4: key.slice(-4),
    origin,
    createdAt,
    expiresAt: undefined,
  };
}

/** Whether a stored key is still accepted at `now`. */
export function keyValid(key: Pick<WriteKeyRecord, 'expiresAt'>, now: number): boolean {
  return key.expiresAt === undefined || key.expiresAt > now;
}
