import { ConfigError } from '../errors';
import { describeType } from '../internal/values';

/**
 * The shared secret of the Webhooks destination. Give an array while rotating: a signature
 * made with any one of them is accepted.
 */
export type WebhookSecret = string | readonly string[];

const EXPECTED =
  'Expected `secret` to be the shared secret of the Webhooks destination (a non-empty string, ' +
  'or an array of non-empty strings while rotating)';

/**
 * Throws `ConfigError` unless `secret` is a non-empty string or a non-empty array of them.
 * Messages describe the kind of value only, never the value.
 */
export function assertSecret(secret: unknown): asserts secret is WebhookSecret {
  if (typeof secret === 'string') {
    if (secret.length === 0) throw emptySecret('an empty string');
    return;
  }
  if (!Array.isArray(secret)) {
    throw new ConfigError(
      `${EXPECTED}, got ${describeType(secret)}. Is the environment variable that should hold it set?`,
      'secret',
    );
  }
  if (secret.length === 0) throw emptySecret('an empty array');
  for (let i = 0; i < secret.length; i++) {
    const item: unknown = secret[i];
    if (typeof item !== 'string' || item.length === 0) {
      throw new ConfigError(`${EXPECTED}, got ${describeType(item)} at \`secret[${i}]\`.`, `secret[${i}]`);
    }
  }
}

function emptySecret(got: string): ConfigError {
  // An empty key still yields a valid-looking HMAC that anyone can compute.
  return new ConfigError(
    `${EXPECTED}, got ${got}. An empty secret would accept signatures anyone can compute; ` +
    'is the environment variable that should hold it set?',
    'secret',
  );
}
