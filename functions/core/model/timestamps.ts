export const TIMESTAMP_EXPECTED =
  'expected integer epoch milliseconds or an ISO 8601 date-time string with an offset (Z or ±hh:mm)';
const TIMESTAMP_NO_OFFSET = 'timestamp string has no UTC offset (ambiguous local time); expected Z or ±hh:mm';
const TIMESTAMP_BAD_EPOCH = 'expected epoch milliseconds as a safe integer within the range of Date';
const TIMESTAMP_BAD_DATE = 'timestamp is not a valid calendar date-time';

const MAX_DATE_MS = 8.64e15;
// The contract's four-digit years (RFC 3339). `Date` goes to ±275760 years, which every consumer would reject.
const CONTRACT_MIN_MS = -62_167_219_200_000;
const CONTRACT_MAX_MS = 253_402_300_799_999;
const TIMESTAMP_OUT_OF_RANGE =
  'timestamp is outside 0000-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z, the range the message contract carries';

// date T hh:mm[:ss[.fff]] [offset]; the offset group is optional here so that a missing offset gets
// its own, clearer message.
const ISO_DATE_TIME =
  /^(\d{4}-\d{2}-(\d{2}))[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-]\d{2})(?::?(\d{2}))?)?$/;

function isoToEpochMs(text: string): number | string {
  const m = ISO_DATE_TIME.exec(text);
  if (m === null) return TIMESTAMP_EXPECTED;
  const [, date, day, hour, minute, second = '00', fraction = '', zulu, offsetHours, offsetMinutes = '00'] =
    m;
  if (zulu === undefined && offsetHours === undefined) return TIMESTAMP_NO_OFFSET;
  // Date.parse, given the strict ISO form: years 0..99 as written, milliseconds truncated as Date does, an
  // out-of-range month, day, minute, second or offset is NaN. It does roll 31 Feb over into March and take
  // hour 24, hence the two checks after it.
  const zone = zulu === undefined ? `${offsetHours}:${offsetMinutes}` : 'Z';
  const ms = Date.parse(`${date}T${hour}:${minute}:${second}.${fraction.slice(0, 3).padEnd(3, '0')}${zone}`);
  if (Number.isNaN(ms) || Number(hour) > 23 || new Date(`${date}T00:00Z`).getUTCDate() !== Number(day)) {
    return TIMESTAMP_BAD_DATE;
  }
  return ms;
}

/** Epoch milliseconds of a partner timestamp, or the message saying why it is not one. */
export function timestampToEpochMs(value: number | string): number | string {
  const ms =
    typeof value === 'string'
      ? isoToEpochMs(value)
      : Number.isSafeInteger(value) && Math.abs(value) <= MAX_DATE_MS
        ? value
        : TIMESTAMP_BAD_EPOCH;
  if (typeof ms === 'string') return ms;
  // An offset can roll an in-range local time over the edge (9999-12-31T23:00-05:00 is year 10000 in UTC).
  return ms < CONTRACT_MIN_MS || ms > CONTRACT_MAX_MS ? TIMESTAMP_OUT_OF_RANGE : ms;
}
