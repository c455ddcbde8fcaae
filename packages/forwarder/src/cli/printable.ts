/**
 * Text from a forwarder (a messageId, a source name, a reason, an error message of the API) as the
 * CLI may print it on a terminal. A write-key holder chooses a messageId: without this, ESC
 * sequences in it would clear the screen or set the window title, a newline would forge a row of
 * the table, and bidi overrides would show a line other than the one printed. Every control
 * character (C0, DEL, C1), line and paragraph separator and invisible or direction-changing format
 * character (Unicode's Cf: bidi overrides and isolates, zero-width characters, the BOM) is shown
 * as `\u{…}` instead, visibly and losslessly; a backslash stays as it is. `--json` output is
 * JSON.stringify's, which escapes C0 controls itself and is meant for programs, not terminals.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u{${c.codePointAt(0)!.toString(16).toUpperCase()}}`);
}

/**
 * A URL given on the command line as it may be printed: without a password (replaced by `***`).
 * Text that does not parse as a URL is not repeated at all.
 */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return printable(parsed.toString());
  } catch {
    return '(a URL that does not parse)';
  }
}

/** True when `url` parses and names a user or a password (fetch refuses it, repeating the URL in its error). */
export function hasCredentials(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false;
  }
}

const UNSAFE_IN_JSON = /[\u007F-\u009F\p{Cf}\p{Zl}\p{Zp}]/gu;

/**
 * `JSON.stringify` whose output a terminal can show safely: the same JSON value (it parses to
 * exactly what the forwarder answered), with DEL, C1 controls and invisible format characters
 * written as `\uXXXX` escapes, which JSON.stringify leaves raw (it escapes only C0 ones).
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(UNSAFE_IN_JSON, (c) =>
    [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')}`).join(''),
  );
}
