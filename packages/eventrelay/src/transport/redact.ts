/**
 * A URL as it may appear in logs, errors and results: no `user:password@`, and no query
 * or fragment, because webhook URLs often carry a token there (`?token=...`).
 */
export function redactUrl(url: URL): string {
  const query = url.search === '' ? '' : '?[redacted]';
  return `${url.protocol}//${url.host}${url.pathname}${query}`;
}
