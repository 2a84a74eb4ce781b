import { START_OPTIONS, type StartOption } from '../config.js';

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
