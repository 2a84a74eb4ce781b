/**
 * About how many instructions RE2 compiles `pattern` into (see linearRegExp), counted repetitions
 * multiplied out: `(?:ab|cd){1000}` is some 5,000, however short its text. Read from the text alone,
 * in one pass, before anything is compiled, so that a pattern whose program would be too large costs
 * nothing to refuse. Stops counting past `limit`. Syntax it does not know is counted as literal text;
 * the compiled program is measured again after compiling.
 */
export function estimatedProgramSize(pattern: string, limit: number): number {
  // The size of each open group's alternatives so far, innermost last: [finished alternatives, current sequence].
  const groups: { alternatives: number; branches: number; sequence: number }[] = [{ alternatives: 0, branches: 0, sequence: 0 }];
  /** The size of the last item of the current sequence: what a quantifier repeats. */
  let last = 0;
  const current = () => groups[groups.length - 1]!;
  const add = (size: number) => {
    current().sequence += size;
    last = size;
  };
  let at = 0;
  while (at < pattern.length) {
    const character = pattern[at]!;
    if (character === '\\') {
      at = afterEscape(pattern, at, add);
    } else if (character === '[') {
      at = afterClass(pattern, at);
      add(1);
    } else if (character === '(') {
      const opened = pattern[at + 1] === '?' ? groupOpening(pattern, at) : { next: at + 1, group: true };
      if (opened.group) groups.push({ alternatives: 0, branches: 0, sequence: 0 });
      at = opened.next;
      last = 0;
    } else if (character === ')' && groups.length > 1) {
      const group = groups.pop()!;
      // A capturing group costs two instructions of its own; counted for every group, to be safe.
      add(group.alternatives + group.sequence + group.branches + 2);
      at++;
    } else if (character === '|') {
      const group = current();
      group.alternatives += group.sequence;
      group.branches++;
      group.sequence = 0;
      last = 0;
      at++;
    } else if (character === '*' || character === '+' || character === '?') {
      current().sequence += 1;
      at += pattern[at + 1] === '?' ? 2 : 1;
    } else if (character === '{') {
      const repeat = /^\{(\d{1,4})(,(\d{0,4}))?\}\??/.exec(pattern.slice(at, at + 12));
      if (repeat === null) add(1);
      else {
        const min = Number(repeat[1]);
        const max = repeat[2] === undefined ? min : repeat[3] === '' ? min + 1 : Number(repeat[3]);
        // The item once more for every repetition past the first, and an alternative for each optional one.
        current().sequence += last * (Math.max(min, max, 1) - 1) + Math.max(max - min, 0);
        at += repeat[0].length;
      }
    } else {
      add(1);
      at++;
    }
    if (groups.reduce((sum, group) => sum + group.alternatives + group.sequence + group.branches, 0) > limit) return limit + 1;
  }
  const outer = groups.reduce((sum, group) => sum + group.alternatives + group.sequence + group.branches + 2, 0);
  return outer;
}

/** Past an escape at `at` (`\d`, `\pL`, `\p{Greek}`, `\x{41}`, `\Q…\E`), telling `add` the size of what it stands for. */
function afterEscape(pattern: string, at: number, add: (size: number) => void): number {
  const next = pattern[at + 1];
  if (next === 'Q') {
    const end = pattern.indexOf('\\E', at + 2);
    const literal = end === -1 ? pattern.length - at - 2 : end - at - 2;
    for (let index = 0; index < literal; index++) add(1);
    return end === -1 ? pattern.length : end + 2;
  }
  add(1);
  if ((next === 'p' || next === 'P' || next === 'x') && pattern[at + 2] === '{') {
    const close = pattern.indexOf('}', at + 3);
    return close === -1 ? pattern.length : close + 1;
  }
  if (next === 'p' || next === 'P') return at + 3;
  if (next === 'x') return at + 4;
  return at + 2;
}

/** Past a character class opening at `at`: `[^]a-z\]]`, `[[:alpha:]]`. */
function afterClass(pattern: string, at: number): number {
  let index = at + 1;
  if (pattern[index] === '^') index++;
  // A `]` first in a class is one of its characters.
  if (pattern[index] === ']') index++;
  while (index < pattern.length) {
    const character = pattern[index]!;
    if (character === '\\') index += 2;
    else if (character === '[' && pattern[index + 1] === ':') {
      const close = pattern.indexOf(':]', index + 2);
      index = close === -1 ? index + 1 : close + 2;
    } else if (character === ']') return index + 1;
    else index++;
  }
  return index;
}

/** Past the flags of a group (`(?:`, `(?i:`, `(?P<name>`, `(?<name>`), or of flags alone (`(?i)`), which open no group. */
function groupOpening(pattern: string, at: number): { next: number; group: boolean } {
  const named = /^\(\?P?<[^>]*>/.exec(pattern.slice(at, at + 80));
  if (named !== null) return { next: at + named[0].length, group: true };
  let index = at + 2;
  while (index < pattern.length && /[a-zA-Z-]/.test(pattern[index]!)) index++;
  if (pattern[index] === ')') return { next: index + 1, group: false };
  return { next: pattern[index] === ':' ? index + 1 : index, group: true };
}
