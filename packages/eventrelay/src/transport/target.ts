import { redactUrl } from './redact';

/** What the built-in transports keep of a target URL, worked out once per URL. */
export interface UrlTarget {
  /** The URL as errors show it: no credentials, no query. */
  readonly display: string;
  /** `Basic ...` from credentials in the URL, unless a static header sets Authorization. */
  readonly authorization: string | undefined;
}

/** The display form and the Basic authorization of a URL (its `user:password@`, percent-decoded as Node's http does). */
export function urlTarget(url: URL): UrlTarget {
  const credentials = url.username !== '' || url.password !== '' ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined;
  return { display: redactUrl(url), authorization: credentials === undefined ? undefined : basicAuthorization(credentials) };
}

/** `Basic <base64 of the UTF-8 bytes of credentials>`, without Node's Buffer (edge runtimes have none). */
export function basicAuthorization(credentials: string): string {
  return `Basic ${base64Utf8(credentials)}`;
}

const encoder = new TextEncoder();

/** Base64 of a string's UTF-8 bytes, with `btoa` (every runtime has it; it takes one char per byte). */
function base64Utf8(text: string): string {
  const bytes = encoder.encode(text);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}
