/**
 * A URL's `transform` as the destination's options take it: checked, not compiled (no engine is
 * loaded here; the destination compiles it, check.ts checks its code).
 */
import { ConfigError, describeValue } from 'eventrelay/internal';
import type { WebhookTransform } from '../store/contract';

/** Largest code a transform may have, in bytes (UTF-8): 64 KB. */
export const TRANSFORM_CODE_LIMIT = 64 * 1024;

/** Bounds of `transform.timeoutMs`, and its default. */
export const TRANSFORM_TIMEOUT = { min: 1, max: 1000, default: 100 } as const;

/**
 * `{ code, timeoutMs? }` as stored: `code` a string of at most 64 KB, `timeoutMs` an integer
 * from 1 to 1000. A ConfigError names the field (`field` + `.code`, `.timeoutMs`).
 */
export function transformOption(value: unknown, field: string): WebhookTransform {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(`Expected \`${field}\` to be an object { code, timeoutMs? }, got ${describeValue(value)}`, field);
  }
  const { code, timeoutMs, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new ConfigError(`Unknown field \`${field}.${unknown}\`; expected \`code\` and \`timeoutMs\``, `${field}.${unknown}`);
  if (typeof code !== 'string' || code.trim() === '') {
    throw new ConfigError(`Expected \`${field}.code\` to be the source of \`function transform(message)\`, got ${describeValue(code)}`, `${field}.code`);
  }
  const bytes = Buffer.byteLength(code);
  if (bytes > TRANSFORM_CODE_LIMIT) throw new ConfigError(`Expected \`${field}.code\` to be at most ${TRANSFORM_CODE_LIMIT} bytes, got ${bytes}`, `${field}.code`);
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < TRANSFORM_TIMEOUT.min || timeoutMs > TRANSFORM_TIMEOUT.max)) {
    throw new ConfigError(
      `Expected \`${field}.timeoutMs\` to be a duration in milliseconds, an integer from ${TRANSFORM_TIMEOUT.min} to ${TRANSFORM_TIMEOUT.max}, got ${describeValue(timeoutMs)}`,
      `${field}.timeoutMs`,
    );
  }
  return timeoutMs === undefined ? { code } : { code, timeoutMs };
}
