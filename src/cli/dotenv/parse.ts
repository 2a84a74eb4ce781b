/**
 * Reads a `.env` file as python-dotenv (which Eunomia's settings use) reads it:
 * - `KEY=value` a line, `export KEY=value` too; blank lines and lines starting with `#` are skipped;
 * - an unquoted value ends at the line's end, less a comment (` #...`) and surrounding space;
 * - a value in single quotes is literal (only `\'` and `\\` are escapes); in double quotes, `\n`, `\t`,
 *   `\"`, `\\`… are escapes; either may span lines;
 * - `${NAME}` and `${NAME:-default}` in unquoted and double-quoted values are replaced by the value of
 *   NAME (the environment's, else one defined earlier in the file; else the default or nothing);
 * - a key without `=` sets nothing; a line that cannot be read is skipped and reported by its number.
 */

export interface ParsedDotenv {
  /** In the file's order; a key given twice keeps its last value. */
  values: Map<string, string>;
  /** Line numbers (from 1) of statements that could not be read. */
  unreadable: number[];
}

const DOUBLE_QUOTED_ESCAPES: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };
const VARIABLE = /\$\{([^}:]*)(?::-([^}]*))?\}/g;

class Unreadable extends Error {}

/** A cursor over the file's text. */
class Scanner {
  position = 0;

  constructor(readonly text: string) {}

  get done(): boolean {
    return this.position >= this.text.length;
  }

  /** Consumes `pattern` (sticky) at the position, returning its match, or undefined. */
  take(pattern: RegExp): RegExpExecArray | undefined {
    const sticky = new RegExp(pattern.source, 'y');
    sticky.lastIndex = this.position;
    const match = sticky.exec(this.text);
    if (match === null) return undefined;
    this.position = sticky.lastIndex;
    return match;
  }

  lineNumber(at = this.position): number {
    let line = 1;
    for (let index = 0; index < at; index++) if (this.text[index] === '\n') line++;
    return line;
  }

  skipLine(): void {
    const end = this.text.indexOf('\n', this.position);
    this.position = end === -1 ? this.text.length : end + 1;
  }
}

/** A quoted value from its opening quote: the text between the quotes, escapes decoded. */
function quoted(scanner: Scanner, quote: "'" | '"'): string {
  let value = '';
  for (let index = scanner.position + 1; index < scanner.text.length; index++) {
    const character = scanner.text[index]!;
    if (character === quote) {
      scanner.position = index + 1;
      return value;
    }
    const next = scanner.text[index + 1];
    if (character === '\\' && next !== undefined && (quote === '"' ? next in DOUBLE_QUOTED_ESCAPES : next === "'" || next === '\\')) {
      value += quote === '"' ? DOUBLE_QUOTED_ESCAPES[next] : next;
      index++;
    } else {
      value += character;
    }
  }
  throw new Unreadable('unterminated quote');
}

function interpolated(value: string, defined: ReadonlyMap<string, string>, env: NodeJS.ProcessEnv): string {
  return value.replace(VARIABLE, (_, name: string, fallback: string | undefined) => env[name] ?? defined.get(name) ?? fallback ?? '');
}

/** The statements of `text`; `env` (the environment, which wins over the file) resolves `${NAME}`. */
export function parseDotenv(text: string, env: NodeJS.ProcessEnv): ParsedDotenv {
  const scanner = new Scanner(text.replace(/\r\n?/g, '\n'));
  const values = new Map<string, string>();
  const unreadable: number[] = [];
  while (!scanner.done) {
    const start = scanner.position;
    try {
      scanner.take(/[ \t]*/);
      if (scanner.take(/(#.*)?(\n|$)/) !== undefined) continue;
      scanner.take(/export[ \t]+/);
      const key = scanner.take(/'([^']+)'|([^=#\s]+)/);
      if (key === undefined) throw new Unreadable('no key');
      scanner.take(/[ \t]*/);
      if (scanner.take(/(#.*)?(\n|$)/) !== undefined) continue;
      if (scanner.take(/=[ \t]*/) === undefined) throw new Unreadable('no =');
      let value: string;
      const opening = scanner.text[scanner.position];
      if (opening === "'" || opening === '"') {
        value = quoted(scanner, opening);
        if (opening === '"') value = interpolated(value, values, env);
        if (scanner.take(/[ \t]*(#.*)?(\n|$)/) === undefined) throw new Unreadable('text after the closing quote');
      } else {
        const rest = scanner.take(/[^\n]*/)![0];
        scanner.take(/\n/);
        value = interpolated(rest.replace(/\s+#.*$/, '').trim(), values, env);
      }
      values.delete(key[1] ?? key[2]!);
      values.set(key[1] ?? key[2]!, value);
    } catch (error) {
      if (!(error instanceof Unreadable)) throw error;
      unreadable.push(scanner.lineNumber(start));
      scanner.position = start;
      scanner.skipLine();
    }
  }
  return { values, unreadable };
}
