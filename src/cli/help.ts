import { START_OPTIONS, type StartOption } from '../config/config.js';

/** Columns are separated by at least this much space. */
const GAP = 2;
const INDENT = '  ';

type Row = readonly [flag: string, variable: string, description: string[]];

function defaultText(option: StartOption): string {
  if (option.defaultHelp !== undefined) return option.defaultHelp;
  if (option.switch === true) return option.default === 'true' ? 'on' : 'off';
  return option.default;
}

/** The words of an option's description; its default is one word, so that it is never split. */
function describe(option: StartOption): string[] {
  const byDefault = defaultText(option);
  return [...option.help.split(' '), ...(byDefault === '' ? [] : [`(default: ${byDefault})`])];
}

/** Joins `words` into lines of at most `width` characters (a longer word gets a line of its own). */
function wrap(words: string[], width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

/**
 * The flags of `start` as a table: flag, variable, then what it does and its default, each column as
 * wide as its widest cell plus a gap, the description wrapped to fit `width` with its continuation
 * lines under it.
 */
export function optionsTable(width: number): string {
  const rows: Row[] = [
    ...Object.entries(START_OPTIONS).map(([name, option]): Row => [
      option.switch === true ? `--[no-]${name}` : `--${name}`,
      option.env,
      describe(option),
    ]),
    ['', 'ADMIN_API_KEY', 'the admin key, sent by clients in the WAY-API-KEY header'.split(' ')],
    [
      '--[no-]dotenv',
      '',
      'read these variables from this file too, where neither a flag nor the environment sets them (default: .env in the working directory, when there is one)'.split(' '),
    ],
  ];
  const flagWidth = Math.max(...rows.map(([flag]) => flag.length)) + GAP;
  const variableWidth = Math.max(...rows.map(([, variable]) => variable.length)) + GAP;
  const descriptionColumn = INDENT.length + flagWidth + variableWidth;
  const descriptionWidth = Math.max(30, width - descriptionColumn);
  return rows
    .flatMap(([flag, variable, description]) =>
      wrap(description, descriptionWidth).map((line, index) =>
        index === 0 ? `${INDENT}${flag.padEnd(flagWidth)}${variable.padEnd(variableWidth)}${line}` : `${' '.repeat(descriptionColumn)}${line}`,
      ),
    )
    .join('\n');
}

/**
 * The part of `usage` (the text of `verdict --help`) about one command: its entry under "Commands:"
 * (an entry starts at two spaces of indent, its continuation lines are indented further) and, for the
 * commands that take them, the flags table that follows. Undefined for a command `usage` does not list.
 */
export function commandHelp(usage: string, command: string, withFlags: boolean): string | undefined {
  const lines = usage.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`${INDENT}${command} `) || line === `${INDENT}${command}`);
  if (start === -1) return undefined;
  let end = start + 1;
  while (end < lines.length && /^ {3,}\S/.test(lines[end]!)) end++;
  // Further entries of the same command (`import entities`, `import eunomia`) belong to it too.
  while (end < lines.length && lines[end]!.startsWith(`${INDENT}${command} `)) {
    end++;
    while (end < lines.length && /^ {3,}\S/.test(lines[end]!)) end++;
  }
  const entry = lines.slice(start, end).flatMap((line) => {
    const head = /^ {2}(\S.*?)(?: {2,}(\S.*))?$/.exec(line);
    if (head === null) return [line];
    return [`${INDENT}verdict ${head[1]}`, ...(head[2] === undefined ? [] : [`${' '.repeat(line.indexOf(head[2]))}${head[2]}`])];
  });
  const flags = withFlags ? ['', ...lines.slice(lines.findIndex((line) => line.startsWith('Flags of ')))] : [];
  return ['Usage:', ...entry, ...flags].join('\n');
}
