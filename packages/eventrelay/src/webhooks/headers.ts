import type { SignatureHeader } from './schemes/signature-format';

/**
 * Request headers as frameworks hand them over: a Fetch `Headers` (anything with a
 * case-insensitive `get`), or a plain object such as Node's `req.headers`.
 */
export type HeadersLike =
  | { get(name: string): string | null }
  | { readonly [name: string]: string | readonly string[] | number | undefined };

/** The header `X-Signature` is read from. */
export const SIGNATURE_HEADER = 'x-signature';

/**
 * The value of header `name` (lowercase), found case-insensitively. In a plain object, keys
 * that differ only in case are repeats of one header and come back as an array, as do
 * array values; `Headers#get` already joins repeats with ", ".
 */
export function getHeader(headers: HeadersLike, name: string): SignatureHeader {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name);
  const record = headers as { readonly [name: string]: unknown };
  let found: string[] | undefined;
  for (const key in record) {
    if (key.length !== name.length || key.toLowerCase() !== name) continue;
    const value = record[key];
    if (value === undefined) continue;
    (found ??= []).push(...(Array.isArray(value) ? value.map(String) : [String(value)]));
  }
  if (found === undefined) return undefined;
  return found.length === 1 ? found[0] : found;
}
