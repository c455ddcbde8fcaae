import { ConfigError, describeValue, stringOption } from 'eventrelay/internal';

/** Source names: what the config file and the admin API accept. */
export const MAX_SOURCE_NAME = 100;

/**
 * Source names appear in logs, metrics labels, URLs and the debugger page, where a character that
 * cannot be seen, or that turns the text around, makes one name look like another. A name is kept
 * in Unicode NFC, so that two spellings of one text (`café` composed or with a combining accent)
 * are one source, and it may hold none of these:
 */
const REFUSED: readonly { readonly pattern: RegExp; readonly what: string }[] = [
  { pattern: /\p{Cc}/u, what: 'a control character' },
  // Embeddings, overrides, isolates and marks: U+202A–U+202E, U+2066–U+2069, U+200E/F, U+061C.
  { pattern: /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/u, what: 'a direction-changing character' },
  { pattern: /[\p{Zl}\p{Zp}]/u, what: 'a line or paragraph separator' },
  // Format characters (U+200B, U+2060, U+FEFF, ...) and the others Unicode says to draw as nothing.
  { pattern: /[\p{Cf}\p{Default_Ignorable_Code_Point}]/u, what: 'an invisible character' },
];

function codePoint(name: string, at: number): string {
  return `U+${name.codePointAt(at)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * A source name as the config file and the admin API take it: 1 to 100 characters once in NFC,
 * not only spaces, without leading or trailing whitespace, and without the characters above. A
 * name in another normal form is taken in NFC. ConfigError names `field`; the message gives the
 * code point and position of what was refused, never the name itself.
 */
export function checkSourceName(value: unknown, field: string): string {
  const raw = stringOption(field, value);
  if (!raw.isWellFormed()) throw new ConfigError(`Expected \`${field}\` to be well-formed Unicode text, got one with a lone surrogate`, field);
  const name = raw.normalize('NFC');
  if (name.length > MAX_SOURCE_NAME) {
    throw new ConfigError(`Expected \`${field}\` to be at most ${MAX_SOURCE_NAME} characters, got ${name.length}`, field);
  }
  for (const { pattern, what } of REFUSED) {
    const at = name.search(pattern);
    if (at >= 0) {
      throw new ConfigError(`Expected \`${field}\` to have no control, invisible or direction-changing characters; found ${what} (${codePoint(name, at)}) at position ${at + 1}`, field);
    }
  }
  if (/^\s|\s$/u.test(name)) {
    throw new ConfigError(`Expected \`${field}\` to have no whitespace at its start or end, got ${describeValue(name)}`, field);
  }
  return name;
}

/**
 * A source name in an admin route's path: as `checkSourceName` takes it, or, for a source kept
 * from before these rules, exactly as stored, so that it can still be read and deleted. Only a
 * name that no rule ever allowed (a C0 or C1 control character, a lone surrogate, over 100
 * characters) is refused.
 */
export function pathSourceName(value: unknown, field: string): string {
  try {
    return checkSourceName(value, field);
  } catch (error) {
    const name = stringOption(field, value);
    // eslint-disable-next-line no-control-regex
    if (name.length > MAX_SOURCE_NAME || /[\u0000-\u001f\u007f-\u009f]/.test(name) || !name.isWellFormed()) throw error;
    return name;
  }
}
