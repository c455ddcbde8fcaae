// RFC 3339 date-time: the sender's form is `2026-03-01T12:34:56.789Z` (toISOString); the
// fraction may have any number of digits or be missing, the zone may be an offset, and `T`
// and `Z` may be lowercase (RFC 3339 section 5.6 allows both). Read character by character, not
// with a regular expression: the forwarder checks one per message, and a match with its groups
// allocates more than the rest of the check costs.

const DASH = 45;
const COLON = 58;
const DOT = 46;
const PLUS = 43;

/** The number written by the ASCII digits at [from, from + count) of `value`, or -1 if one is not a digit. */
function digitsAt(value: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const d = value.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * Whether `value` is an RFC 3339 date-time (an ISO 8601 profile) naming a real instant:
 * a time zone is required and every field must be in range (no 2026-02-30, no 24:00).
 * Second 60 is accepted, as RFC 3339 does for leap seconds (`23:59:60Z`); the grammar does
 * not say which days have one, so neither does this check. `Date.parse` refuses second 60:
 * code that needs a `Date` should treat it as :59.
 */
export function isTimestamp(value: string): boolean {
  const length = value.length;
  // The shortest is YYYY-MM-DDTHH:MM:SSZ.
  if (length < 20) return false;
  const year = digitsAt(value, 0, 4);
  const month = digitsAt(value, 5, 2);
  const day = digitsAt(value, 8, 2);
  const hour = digitsAt(value, 11, 2);
  const minute = digitsAt(value, 14, 2);
  const second = digitsAt(value, 17, 2);
  const t = value.charCodeAt(10);
  if (
    year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0 ||
    value.charCodeAt(4) !== DASH || value.charCodeAt(7) !== DASH || (t !== 84 && t !== 116) ||
    value.charCodeAt(13) !== COLON || value.charCodeAt(16) !== COLON
  ) {
    return false;
  }
  let at = 19;
  if (value.charCodeAt(at) === DOT) {
    const first = ++at;
    while (at < length && digitsAt(value, at, 1) >= 0) at++;
    if (at === first) return false;
  }
  const zone = value.charCodeAt(at);
  let offsetHour = 0;
  let offsetMinute = 0;
  if (zone === 90 || zone === 122) {
    if (at + 1 !== length) return false;
  } else if (zone === PLUS || zone === DASH) {
    if (at + 6 !== length || value.charCodeAt(at + 3) !== COLON) return false;
    offsetHour = digitsAt(value, at + 1, 2);
    offsetMinute = digitsAt(value, at + 4, 2);
    if (offsetHour < 0 || offsetMinute < 0) return false;
  } else {
    return false;
  }
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 60 &&
    offsetHour <= 23 &&
    offsetMinute <= 59
  );
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 && leap ? 29 : DAYS[month - 1]!;
}
