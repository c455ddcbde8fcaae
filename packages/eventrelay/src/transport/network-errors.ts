import { EventRelayError, NetworkError } from '../errors';

/** Certificate problems: retrying cannot help and the spec says such a receiver gets nothing. */
const CERTIFICATE_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SELF_SIGNED_LEAF',
]);

const DESCRIPTIONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  ENOTFOUND: 'host name not found (DNS)',
  EAI_AGAIN: 'DNS lookup failed temporarily',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed certificate refused',
  SELF_SIGNED_CERT_IN_CHAIN: 'self-signed certificate in the chain refused',
  ERR_SELF_SIGNED_LEAF: 'self-signed certificate refused',
};

/**
 * Wraps a socket or TLS error into a `NetworkError` whose message names the URL (already
 * redacted by the caller) and the cause, never headers or body. Errors that are already
 * ours (timeouts) pass through.
 */
export function toNetworkError(error: unknown, where: string): EventRelayError {
  if (error instanceof EventRelayError) return error;
  const code = errorCode(error);
  const certificate = code !== undefined && CERTIFICATE_CODES.has(code);
  // Refused, reset, DNS failures and unknown socket errors may pass later; certificate and
  // other TLS configuration errors will not.
  const retryable = !certificate && !(code?.startsWith('ERR_TLS') ?? false);
  const what = (code && DESCRIPTIONS[code]) ?? (error instanceof Error ? error.message : String(error));
  const suffix = code && !what.includes(code) ? ` (${code})` : '';
  const hint = certificate ? '; HTTPS receivers need a certificate from a trusted CA, this cannot be turned off' : '';
  return new NetworkError(`Request to ${where} failed: ${what}${suffix}${hint}`, {
    cause: error,
    code: certificate ? 'ERR_TLS_CERTIFICATE' : 'ERR_NETWORK',
    retryable,
  });
}

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
