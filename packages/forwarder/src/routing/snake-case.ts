import { ValidationError } from 'eventrelay/internal';

/**
 * The trait name an audience is sent under (spec 6: "the snake_case form of the audience name").
 *
 * Rules, pinned by unit tests:
 * - accents are dropped (`Café` → `cafe`); letters of other scripts are kept as they are;
 * - apostrophes vanish without a break (`Don't Churn` → `dont_churn`);
 * - a word starts at a lower-to-upper change (`highValue` → `high_value`), at the last capital of
 *   a capital run followed by a small letter (`VIPUsers` → `vip_users`) and after a digit
 *   followed by a capital (`top10Users` → `top10_users`);
 * - digits stay with the letters before them (`Q3 Buyers` → `q3_buyers`, not `q_3_buyers`);
 * - any other run of characters that are not letters or digits (spaces, `-`, `_`, `.`, `!`, ...)
 *   is one break; breaks at either end are dropped; the result is lower case.
 * A name with no letter or digit has no snake_case form: ValidationError.
 */
export function snakeCase(name: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/['\u2019]/g, '')
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '');
  if (words.length === 0) {
    throw new ValidationError(
      `Expected an audience name with at least one letter or digit, got ${JSON.stringify(name)}`,
      'audience',
    );
  }
  return words.join('_').toLowerCase();
}
