// RFC 3339 date-time: the sender's form is `2026-03-01T12:34:56.789Z` (toISOString); the
// fraction may have any number of digits or be missing, the zone may be an offset, and `T`
// and `Z` may be lowercase (RFC 3339 section 5.6 allows both).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * Whether `value` is an RFC 3339 date-time (an ISO 8601 profile) naming a real instant:
 * a time zone is required and every field must be in range (no 2026-02-30, no 24:00).
 * Second 60 is accepted, as RFC 3339 does for leap seconds (`23:59:60Z`); the grammar does
 * not say which days have one, so neither does this check. `Date.parse` refuses second 60:
 * code that needs a `Date` should treat it as :59.
 */
export function isTimestamp(value: string): boolean {
  const m = DATE_TIME.exec(value);
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
    number, number, number, number, number, number,
  ];
  const offsetHour = m[7] === undefined ? 0 : Number(m[7]);
  const offsetMinute = m[8] === undefined ? 0 : Number(m[8]);
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
