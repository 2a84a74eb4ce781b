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

const [DASH, COLON, DOT, PLUS, UPPER_T, LOWER_T, UPPER_Z, LOWER_Z] = [...'-:.+TtZz'].map((character) => character.charCodeAt(0)) as [number, number, number, number, number, number, number, number];

/**
 * Days from 1970-01-01 to a day of the proleptic Gregorian calendar, by arithmetic alone (the
 * civil-from-days inverse): eras of 400 years, years starting in March so that a leap day comes last.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const shifted = month <= 2 ? year - 1 : year;
  const era = Math.floor(shifted / 400);
  const yearOfEra = shifted - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

function readInstant(text: string): number | undefined {
  if (text.length < 20 || text.length > 35) return undefined;
  if (text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH || (text.charCodeAt(10) !== UPPER_T && text.charCodeAt(10) !== LOWER_T) || text.charCodeAt(13) !== COLON || text.charCodeAt(16) !== COLON) return undefined;
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  const daysInMonth = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1];
  if (year < 0 || daysInMonth === undefined || day < 1 || day > daysInMonth || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return undefined;
  let at = 19;
  let milliseconds = 0;
  if (text.charCodeAt(at) === DOT) {
    const start = ++at;
    while (at < text.length && at - start < 9 && digitsAt(text, at, 1) >= 0) at++;
    if (at === start) return undefined;
    // Milliseconds: the first three digits of the fraction.
    const kept = Math.min(at - start, 3);
    milliseconds = digitsAt(text, start, kept) * 10 ** (3 - kept);
  }
  let offset = 0;
  const zone = text.charCodeAt(at);
  if ((zone === UPPER_Z || zone === LOWER_Z) && at + 1 === text.length) offset = 0;
  else if ((zone === PLUS || zone === DASH) && at + 6 === text.length && text.charCodeAt(at + 3) === COLON) {
    const hours = digitsAt(text, at + 1, 2);
    const minutes = digitsAt(text, at + 4, 2);
    if (hours < 0 || hours > 23 || minutes < 0 || minutes > 59) return undefined;
    offset = (zone === DASH ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  } else return undefined;
  return daysFromCivil(year, month, day) * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1000 + milliseconds - offset;
}

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

/** The test of a window that windowIssue accepts: whether a date-time falls in it, in its zone's local time; undefined for what is not a date-time. */
export function inWindow(value: unknown): (attribute: unknown) => boolean | undefined {
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
    if (instant === undefined) return undefined;
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

/** The longest duration `within` takes: about 270 years, far inside the instants a date-time names. */
export const MAX_DURATION_DAYS = 100_000;
const DURATION = /^P(?:(\d{1,6})W|(?:(\d{1,6})D)?(?:T(?:(\d{1,8})H)?(?:(\d{1,10})M)?(?:(\d{1,12})S)?)?)$/;

/**
 * The milliseconds an ISO 8601 duration of whole weeks, days, hours, minutes and seconds names
 * (`PT15M`, `P7D`, `P1DT12H`, `P2W`), or undefined for anything else: months and years are left out,
 * their length depending on where they fall.
 */
export function durationOf(text: unknown): number | undefined {
  if (typeof text !== 'string' || text.length > 40 || text === 'P' || text.endsWith('T')) return undefined;
  const parts = DURATION.exec(text);
  if (parts === null) return undefined;
  const [weeks, days, hours, minutes, seconds] = parts.slice(1).map((part) => (part === undefined ? 0 : Number(part)));
  const total = ((((weeks! * 7 + days!) * 24 + hours!) * 60 + minutes!) * 60 + seconds!) * 1000;
  return total <= MAX_DURATION_DAYS * DAY ? total : undefined;
}

/** A span around an anchor instant: from `last` before it to `next` after it, both included. */
export interface Nearness {
  last?: string;
  next?: string;
  /** The anchor, a date-time; without it, the value the condition's `value_from` reads, or the decision's time. */
  of?: string;
}

const NEARNESS_KEYS = new Set(['last', 'next', 'of']);

/** Why `value` is not a span `within` takes, or undefined when it is one. */
export function nearnessIssue(value: unknown): string | undefined {
  const example = '{"last": "PT15M"}, {"next": "P7D"} or {"last": "P1D", "next": "P1D"}';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `needs a span such as ${example}`;
  const span = value as Record<string, unknown>;
  const unknown = Object.keys(span).find((key) => !NEARNESS_KEYS.has(key));
  if (unknown !== undefined) return `takes a span of last, next and of, not '${unknown}'`;
  if (span.last === undefined && span.next === undefined) return `needs 'last' or 'next', or both: ${example}`;
  for (const key of ['last', 'next'] as const) {
    if (span[key] !== undefined && durationOf(span[key]) === undefined) {
      return `takes '${key}' as an ISO 8601 duration of weeks, days, hours, minutes and seconds ('PT15M', 'P7D', 'P1DT12H'), at most ${MAX_DURATION_DAYS} days`;
    }
  }
  if (span.of !== undefined && instantOf(span.of) === undefined) return "takes 'of' as a date-time, RFC 3339 with its offset ('2026-12-31T23:59:59Z')";
  return undefined;
}

/** Whether a date-time falls within a span (one nearnessIssue accepts) of an anchor date-time; undefined when either is not one. */
export function nearTo(value: unknown): (attribute: unknown, anchor: unknown) => boolean | undefined {
  const span = value as Nearness;
  const [last, next] = [durationOf(span.last) ?? 0, durationOf(span.next) ?? 0];
  // The last anchor read, kept apart from instantOf's text: each check reads the anchor (most often
  // the decision's time, the same for checks in one millisecond) beside a date-time of its own.
  let anchorText: unknown;
  let center: number | undefined;
  return (attribute, anchor) => {
    if (anchor !== anchorText) {
      anchorText = anchor;
      center = instantOf(anchor);
    }
    if (center === undefined) return undefined;
    const instant = instantOf(attribute);
    return instant === undefined ? undefined : instant >= center - last && instant <= center + next;
  };
}
