import { open } from 'node:fs/promises';
import type { DecisionRequest } from '../engine/index.js';
import type { RecentCheck } from './recent-checks.js';

/** Bytes read from the log at a time, from its end backwards. */
const CHUNK_BYTES = 1024 * 1024;
/** The most of the log one preview reads: past it, the older lines are not replayed (and the answer says so). */
export const MAX_LOG_BYTES_READ = 16 * 1024 * 1024;
/** A longer line is not replayed: a check kept in memory is 16 KB at most, and its line holds it twice. */
export const MAX_REPLAYED_LINE_BYTES = 64 * 1024;
/** Lines, and characters of them, turned into checks between two pauses of the event loop, at most. */
const SLICE_LINES = 500;
const SLICE_CHARACTERS = 1024 * 1024;

/** Why a line of the log was not replayed, counted. */
export interface LogSkips {
  /** Values were masked (`--decision-log-mask`): the check cannot be decided as it was. */
  masked: number;
  /** The check was refused (400) for breaking the attribute schemas: nothing was decided. */
  refused: number;
  /** Not a decision line this server writes (or longer than MAX_REPLAYED_LINE_BYTES). */
  unreadable: number;
}

/** The newest lines of a file, oldest first. */
export interface NewestLines {
  lines: string[];
  /** Why older lines were left unread, when some were. */
  cut?: string;
}

/**
 * The newest `limit` complete lines of the file at `path`, read backwards a chunk at a time and never
 * more than MAX_LOG_BYTES_READ of it (a line still being written, with no newline yet, is left out).
 */
export async function newestLines(path: string, limit: number): Promise<NewestLines> {
  const file = await open(path, 'r');
  try {
    const size = (await file.stat()).size;
    const newestFirst: string[] = [];
    // The start of a line whose end is already read: joined to the chunk before it.
    let unfinished = Buffer.alloc(0);
    // The bytes after the file's last newline are a line still being written: left out.
    let lastNewlineSeen = false;
    let position = size;
    while (position > 0 && newestFirst.length < limit) {
      if (size - position >= MAX_LOG_BYTES_READ) {
        return { lines: newestFirst.reverse(), cut: `only the newest ${MAX_LOG_BYTES_READ / (1024 * 1024)} MiB of the decision log were read` };
      }
      const length = Math.min(CHUNK_BYTES, position);
      position -= length;
      const chunk = Buffer.alloc(length);
      await file.read(chunk, 0, length, position);
      const bytes = Buffer.concat([chunk, unfinished]);
      let end = bytes.length;
      for (let newline = end > 0 ? bytes.lastIndexOf(10, end - 1) : -1; newline >= 0 && newestFirst.length < limit; newline = end > 0 ? bytes.lastIndexOf(10, end - 1) : -1) {
        if (lastNewlineSeen) newestFirst.push(bytes.toString('utf8', newline + 1, end));
        lastNewlineSeen = true;
        end = newline;
      }
      // A line too long to replay is not grown further: what is kept of it no longer parses.
      unfinished = end > MAX_REPLAYED_LINE_BYTES ? Buffer.from('\u0000') : bytes.subarray(0, end);
    }
    if (position === 0 && lastNewlineSeen && unfinished.length > 0 && newestFirst.length < limit) newestFirst.push(unfinished.toString('utf8'));
    return { lines: newestFirst.reverse() };
  } finally {
    await file.close();
  }
}

type LoggedAttributes = Record<string, unknown>;

interface LoggedDecision {
  time: string;
  request: { principal: { uri?: string }; resource: { uri?: string }; action: string; action_attributes?: LoggedAttributes; context?: LoggedAttributes };
  resolved: { principal: LoggedAttributes; resource: LoggedAttributes };
  masked?: string[];
  refused?: true;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const optionalString = (value: unknown) => value === undefined || typeof value === 'string';

function isLoggedDecision(value: unknown): value is LoggedDecision {
  if (!isObject(value) || typeof value.time !== 'string' || !isObject(value.request) || !isObject(value.resolved)) return false;
  const { principal, resource, action, action_attributes: actionAttributes, context } = value.request;
  return (
    isObject(principal) &&
    isObject(resource) &&
    optionalString(principal.uri) &&
    optionalString(resource.uri) &&
    typeof action === 'string' &&
    (actionAttributes === undefined || isObject(actionAttributes)) &&
    (context === undefined || isObject(context)) &&
    isObject(value.resolved.principal) &&
    isObject(value.resolved.resource) &&
    !Number.isNaN(Date.parse(value.time))
  );
}

const attributesOf = (logged: LoggedAttributes) => new Map(Object.entries(logged));

/** A decision line as the check it decided, read as the server read it (the registry merge done), at the line's time. */
function checkOfLine(logged: LoggedDecision): RecentCheck {
  const { request, resolved } = logged;
  const check: DecisionRequest = {
    principal: { uri: request.principal.uri, attributes: attributesOf(resolved.principal) },
    resource: { uri: request.resource.uri, attributes: attributesOf(resolved.resource) },
    action: request.action,
    ...(request.action_attributes !== undefined && { actionAttributes: attributesOf(request.action_attributes) }),
    ...(request.context !== undefined && { context: attributesOf(request.context) }),
    time: logged.time,
  };
  return { request: check, at: Date.parse(logged.time) };
}

/**
 * The checks of decision-log lines, oldest first, with the lines that cannot be replayed counted by
 * why. A generator that pauses between slices of lines: run it with runInSlices.
 */
export function* checksOfLogLines(lines: readonly string[]): Generator<void, { checks: RecentCheck[]; skipped: LogSkips }> {
  const checks: RecentCheck[] = [];
  const skipped: LogSkips = { masked: 0, refused: 0, unreadable: 0 };
  let [sliceLines, sliceCharacters] = [0, 0];
  for (const line of lines) {
    if (sliceLines === SLICE_LINES || sliceCharacters >= SLICE_CHARACTERS) {
      yield;
      [sliceLines, sliceCharacters] = [0, 0];
    }
    sliceLines++;
    sliceCharacters += line.length;
    let logged: unknown;
    try {
      logged = line.length > MAX_REPLAYED_LINE_BYTES ? undefined : JSON.parse(line);
    } catch {
      logged = undefined;
    }
    if (!isLoggedDecision(logged)) skipped.unreadable++;
    else if (logged.refused === true) skipped.refused++;
    else if (logged.masked !== undefined && logged.masked.length > 0) skipped.masked++;
    else checks.push(checkOfLine(logged));
  }
  return { checks, skipped };
}
