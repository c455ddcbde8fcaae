import { ConfigError } from 'eventrelay/internal';

/**
 * Refuses a URL whose text holds a control character (CR, LF, TAB, NUL, DEL, C1): the URL parser
 * would drop or percent-encode it and send another URL than the one written, and CR/LF is how a
 * header gets smuggled into a request. Checked on the raw text, before `new URL`. Other values
 * pass through for `urlOption` to judge; the URL is never repeated (it may hold credentials).
 */
export function refuseControlCharacters(field: string, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const at = value.search(/\p{Cc}/u);
  if (at >= 0) {
    const code = value.codePointAt(at)!.toString(16).toUpperCase().padStart(4, '0');
    throw new ConfigError(`Expected \`${field}\` to be a URL without control characters (CR, LF, TAB and the like); found U+${code} at position ${at + 1}`, field);
  }
  return value;
}
