/**
 * Date-times as conditions read them: RFC 3339 text with a time zone offset or `Z`
 * (`2026-11-28T14:05:00Z`, `2026-11-28T15:05:00.250+01:00`), compared as the instants they name.
 * Read by position, without a regular expression or an allocation: a condition on a date-time reads
 * one for every check.
 */
const ZERO = 48;

/** The number the `length` digits at `at` write, or -1 when one of them is not a digit. */
function digitsAt(text: string, at: number, length: number): number {
  let value = 0;
  for (let index = at; index < at + length; index++) {
    const digit = text.charCodeAt(index) - ZERO;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);

// The last text read and its instant: the decision's time is read by every condition on it, and
// checks made in one millisecond share it.
let lastText = '';
let lastInstant: number | undefined;

/** The instant `text` names, in milliseconds since 1970 UTC, or undefined when it is not an RFC 3339 date-time of a real calendar day. */
export function instantOf(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  if (text !== lastText) {
    lastInstant = readInstant(text);
    lastText = text;
  }
  return lastInstant;
}

function readInstant(text: string): number | undefined {
  if (text.length < 20 || text.length > 35) return undefined;
  const separators = text[4] === '-' && text[7] === '-' && (text[10] === 'T' || text[10] === 't') && text[13] === ':' && text[16] === ':';
  if (!separators) return undefined;
  const [year, month, day, hour, minute, second] = [digitsAt(text, 0, 4), digitsAt(text, 5, 2), digitsAt(text, 8, 2), digitsAt(text, 11, 2), digitsAt(text, 14, 2), digitsAt(text, 17, 2)];
  const daysInMonth = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1];
  if (year < 0 || daysInMonth === undefined || day < 1 || day > daysInMonth || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return undefined;
  let at = 19;
  let milliseconds = 0;
  if (text[at] === '.') {
    const start = ++at;
    while (at < text.length && at - start < 9 && digitsAt(text, at, 1) >= 0) at++;
    if (at === start) return undefined;
    // Milliseconds: the first three digits of the fraction.
    milliseconds = Math.floor(digitsAt(text, start, Math.min(at - start, 3)) * 10 ** (3 - Math.min(at - start, 3)));
  }
  let offset = 0;
  const zone = text[at];
  if ((zone === 'Z' || zone === 'z') && at + 1 === text.length) offset = 0;
  else if ((zone === '+' || zone === '-') && at + 6 === text.length && text[at + 3] === ':') {
    const [hours, minutes] = [digitsAt(text, at + 1, 2), digitsAt(text, at + 4, 2)];
    if (hours < 0 || hours > 23 || minutes < 0 || minutes > 59) return undefined;
    offset = (zone === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  } else return undefined;
  // Date.UTC reads years 0 to 99 as 1900 to 1999: those are taken 400 years (a whole number of days) later.
  const early = year < 100 ? FOUR_CENTURIES : 0;
  return Date.UTC(year + (early === 0 ? 0 : 400), month - 1, day, hour, minute, second, milliseconds) - early - offset;
}

const FOUR_CENTURIES = 146_097 * 86_400_000;

/** The decision's time as conditions read it (`context.time`): the instant, in RFC 3339 UTC text. */
export const decisionTime = (): string => new Date().toISOString();

export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
type Weekday = (typeof WEEKDAYS)[number];

/** A window of local time in a named zone: some weekdays, and a time of day from `from` up to (not including) `to`. */
export interface TimeWindow {
  zone: string;
  days?: Weekday[];
  from?: string;
  to?: string;
}

const TIME_OF_DAY = /^([01]\d|2[0-3]):([0-5]\d)$/;
const minutesOf = (text: string) => Number(text.slice(0, 2)) * 60 + Number(text.slice(3, 5));
const WINDOW_KEYS = new Set(['zone', 'days', 'from', 'to']);

/** Why `value` is not a window `during` takes, or undefined when it is one. */
export function windowIssue(value: unknown): string | undefined {
  const example = '{"zone": "Europe/Berlin", "days": ["mon", "fri"], "from": "09:00", "to": "18:00"}';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `needs a window, such as ${example}`;
  const window = value as Record<string, unknown>;
  const unknown = Object.keys(window).find((key) => !WINDOW_KEYS.has(key));
  if (unknown !== undefined) return `takes a window of zone, days, from and to, not '${unknown}'`;
  if (typeof window.zone !== 'string') return `needs a window with a zone, such as ${example}`;
  if (zoneFormat(window.zone) === undefined) return `needs a time zone the server knows by its IANA name ('Europe/Berlin', 'UTC'), not '${window.zone}'`;
  if (window.days !== undefined && (!Array.isArray(window.days) || window.days.length === 0 || window.days.some((day) => !(WEEKDAYS as readonly unknown[]).includes(day)))) {
    return `takes days as a list of ${WEEKDAYS.join(', ')}`;
  }
  for (const key of ['from', 'to'] as const) {
    if (window[key] !== undefined && (typeof window[key] !== 'string' || !TIME_OF_DAY.test(window[key]))) return `takes '${key}' as a time of day, HH:MM from 00:00 to 23:59`;
  }
  if ((window.from === undefined) !== (window.to === undefined)) return "takes 'from' and 'to' together";
  if (window.days === undefined && window.from === undefined) return "needs 'days', or 'from' and 'to'";
  return undefined;
}

const formats = new Map<string, Intl.DateTimeFormat | undefined>();

/** The formatter of a zone's local time, made once per zone; undefined for a zone the runtime does not know. */
function zoneFormat(zone: string): Intl.DateTimeFormat | undefined {
  if (!formats.has(zone)) {
    let format: Intl.DateTimeFormat | undefined;
    try {
      format = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' });
    } catch {
      format = undefined;
    }
    // Zones are named by policies, which are bounded; a name that is not a zone is refused before it is kept.
    if (format !== undefined || formats.size < 1000) formats.set(zone, format);
  }
  return formats.get(zone);
}

const MINUTE = 60_000;
const DAY = 1_440 * MINUTE;
/** Zones change their offset at whole quarter hours: the offset found for one instant holds for its quarter hour. */
const QUARTER_HOUR = 15 * MINUTE;
/** Quarter hours whose offset a window keeps: four days' worth. */
const MAX_OFFSETS_KEPT = 384;

/** The test of a window that windowIssue accepts: whether a date-time falls in it, in its zone's local time. */
export function inWindow(value: unknown): (attribute: unknown) => boolean {
  const window = value as TimeWindow;
  const format = zoneFormat(window.zone)!;
  const days = window.days && new Set(window.days.map((day) => WEEKDAYS.indexOf(day)));
  const [from, to] = window.from === undefined ? [undefined, undefined] : [minutesOf(window.from), minutesOf(window.to!)];
  // The offset of each quarter hour met lately: most checks read the time of now.
  const offsets = new Map<number, number>();
  const offsetAt = (instant: number) => {
    const quarter = Math.floor(instant / QUARTER_HOUR);
    let offset = offsets.get(quarter);
    if (offset === undefined) {
      const start = quarter * QUARTER_HOUR;
      const parts = Object.fromEntries(format.formatToParts(start).map(({ type, value: part }) => [type, Number(part)]));
      offset = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!) - start;
      if (offsets.size >= MAX_OFFSETS_KEPT) offsets.clear();
      offsets.set(quarter, offset);
    }
    return offset;
  };
  return (attribute) => {
    const instant = instantOf(attribute);
    if (instant === undefined) return false;
    const local = instant + offsetAt(instant);
    const dayNumber = Math.floor(local / DAY);
    // 1970-01-01 was a Thursday.
    if (days !== undefined && !days.has((((dayNumber + 4) % 7) + 7) % 7)) return false;
    if (from === undefined) return true;
    const minute = Math.floor((local - dayNumber * DAY) / MINUTE);
    // A window whose end comes before its start runs past midnight.
    return from <= to! ? minute >= from && minute < to! : minute >= from || minute < to!;
  };
}
