import { NetworkError, TimeoutError } from '../errors';

/** TLS failures that no retry will fix: the certificate is not trusted or does not match. */
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** `https://user:pass@host/path?q` → `https://host/path`: safe for logs and error messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/** Maps a low-level request failure to `TimeoutError` or `NetworkError`, with a message free of credentials. */
export function toNetworkError(error: unknown, url: string, timeout: number): NetworkError {
  const code = (error as { code?: unknown } | null)?.code;
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError' || code === 'ETIMEDOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new TimeoutError(timeout, { cause: error });
  }
  const detail = typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
  if (typeof code === 'string' && TLS_CODES.has(code)) {
    return new NetworkError(`TLS verification of ${redactUrl(url)} failed (${detail}); no request was sent`, {
      cause: error,
      code: 'ERR_TLS',
      retryable: false,
    });
  }
  return new NetworkError(`Request to ${redactUrl(url)} failed: ${detail}`, { cause: error });
}
