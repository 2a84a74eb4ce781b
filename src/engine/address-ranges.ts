/** The most ranges one `in_cidr` value may list. */
export const MAX_ADDRESS_RANGES = 256;

/**
 * What readAddress read: nothing, an IPv4 address, or an IPv6 one. Either is held as the four 32-bit
 * words of its IPv6 form, an IPv4 address as its IPv4-mapped IPv6 address (`::ffff:a.b.c.d`): an
 * address only ever falls in a range of its own family, and an IPv4-mapped IPv6 address is the IPv4
 * address it maps.
 */
type Family = 0 | 4 | 6;
const Family = { None: 0, V4: 4, V6: 6 } as const;

// The address last read, written in place: a check reads one address at a time, on one thread, and
// reading it allocates nothing (this runs for every check that meets an in_cidr condition).
const words = new Uint32Array(4);
const groups = new Uint16Array(8);

const DOT = 46;
const COLON = 58;
const ZERO = 48;

/** Each ASCII character's value as a hexadecimal digit, or -1. */
const HEX_DIGITS = new Int8Array(128).fill(-1);
for (let digit = 0; digit < 16; digit++) {
  HEX_DIGITS['0123456789abcdef'.charCodeAt(digit)] = digit;
  HEX_DIGITS['0123456789ABCDEF'.charCodeAt(digit)] = digit;
}

const hexDigit = (code: number): number => (code < 128 ? HEX_DIGITS[code]! : -1);

/** The dotted IPv4 address in text[start, end) as one number, or -1: four decimal octets, no leading zeros. */
function ipv4Word(text: string, start: number, end: number): number {
  let word = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let index = start; index < end; index++) {
    const code = text.charCodeAt(index);
    if (code === DOT) {
      if (digits === 0 || dots === 3) return -1;
      word = word * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (code >= ZERO && code <= ZERO + 9) {
      if (digits > 0 && octet === 0) return -1;
      octet = octet * 10 + code - ZERO;
      if (++digits > 3 || octet > 255) return -1;
    } else return -1;
  }
  return dots === 3 && digits > 0 ? word * 256 + octet : -1;
}

/** Reads the IPv6 address in `text` into `words`: hexadecimal groups, one `::` at most, a dotted IPv4 tail; no zone. */
function readIpv6(text: string): Family {
  let count = 0;
  let gap = -1;
  let index = 0;
  const end = text.length;
  if (text.charCodeAt(0) === COLON) {
    if (text.charCodeAt(1) !== COLON) return Family.None;
    gap = 0;
    index = 2;
  }
  while (index < end) {
    const start = index;
    let group = 0;
    while (index < end && index - start < 5) {
      const digit = hexDigit(text.charCodeAt(index));
      if (digit < 0) break;
      group = group * 16 + digit;
      index++;
    }
    const code = index < end ? text.charCodeAt(index) : -1;
    if (code === DOT) {
      // A dotted IPv4 tail, last, as two groups.
      const tail = ipv4Word(text, start, end);
      if (tail < 0 || count > 6) return Family.None;
      groups[count++] = Math.floor(tail / 65536);
      groups[count++] = tail % 65536;
      index = end;
      break;
    }
    if (index === start || index - start > 4 || count === 8) return Family.None;
    groups[count++] = group;
    if (code === -1) break;
    if (code !== COLON) return Family.None;
    index++;
    if (text.charCodeAt(index) === COLON) {
      if (gap >= 0) return Family.None;
      gap = count;
      index++;
    } else if (index === end) return Family.None;
  }
  if (gap < 0 ? count !== 8 : count > 7) return Family.None;
  if (gap >= 0) {
    // The groups after `::` move to the end; those it stands for are zeros.
    const missing = 8 - count;
    for (let position = count - 1; position >= gap; position--) groups[position + missing] = groups[position]!;
    for (let position = gap; position < gap + missing; position++) groups[position] = 0;
  }
  for (let word = 0; word < 4; word++) words[word] = groups[2 * word]! * 65536 + groups[2 * word + 1]!;
  return words[0] === 0 && words[1] === 0 && words[2] === 0xffff ? Family.V4 : Family.V6;
}

/** Reads `text` into `words`, as an address written as people write it, and says which family it is (None: no address). */
function readAddress(text: string): Family {
  const v4 = ipv4Word(text, 0, text.length);
  if (v4 >= 0) {
    words[0] = 0;
    words[1] = 0;
    words[2] = 0xffff;
    words[3] = v4;
    return Family.V4;
  }
  return text.length > 1 && text.length < 46 ? readIpv6(text) : Family.None;
}

/** A range: the words an address's must equal under the mask, by family. */
interface Range {
  family: Family;
  network: Uint32Array;
  mask: Uint32Array;
}

/** `text` (`10.16.0.0/12`, `2001:db8::/32`, or one address alone) as a range, or why it is not one. */
function parseRange(text: string): Range | string {
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const family = readAddress(address);
  if (family === Family.None) return `'${text}' is not an IPv4 or IPv6 address or CIDR range`;
  const width = ipv4Word(address, 0, address.length) >= 0 ? 32 : 128;
  const prefix = slash === -1 ? String(width) : text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > width) return `'${text}' has a prefix length that is not 0 to ${width}`;
  const bits = Number(prefix) + (128 - width);
  const mask = new Uint32Array(4);
  for (let word = 0; word < 4; word++) {
    const left = bits - 32 * word;
    mask[word] = left >= 32 ? 0xffffffff : left <= 0 ? 0 : ~(0xffffffff >>> left) >>> 0;
  }
  return { family, network: words.map((word, index) => (word & mask[index]!) >>> 0), mask };
}

/** Why `value` is not a range or a list of ranges `in_cidr` takes, or undefined when it is one. */
export function rangesIssue(value: unknown): string | undefined {
  const texts = Array.isArray(value) ? value : [value];
  if (texts.length === 0) return 'needs at least one CIDR range';
  if (texts.length > MAX_ADDRESS_RANGES) return `takes at most ${MAX_ADDRESS_RANGES} CIDR ranges`;
  for (const text of texts) {
    if (typeof text !== 'string') return "needs a CIDR range ('10.16.0.0/12', '2001:db8::/32') or a list of them";
    const range = parseRange(text);
    if (typeof range === 'string') return `needs CIDR ranges: ${range}`;
  }
  return undefined;
}

/** Whether the last address read falls in the range. */
function inRange({ family, network, mask }: Range): boolean {
  return (
    family === lastFamily &&
    ((words[3]! & mask[3]!) >>> 0) === network[3] &&
    ((words[2]! & mask[2]!) >>> 0) === network[2] &&
    ((words[1]! & mask[1]!) >>> 0) === network[1] &&
    ((words[0]! & mask[0]!) >>> 0) === network[0]
  );
}
let lastFamily: Family = Family.None;

/**
 * The test of a range or a list of them that rangesIssue accepts: undefined for anything but the
 * text of an address, else whether it falls in one of them.
 */
export function addressRanges(value: unknown): (attribute: unknown) => boolean | undefined {
  const ranges = (Array.isArray(value) ? value : [value]).map((text) => parseRange(text as string) as Range);
  return (attribute) => {
    if (typeof attribute !== 'string') return undefined;
    lastFamily = readAddress(attribute);
    if (lastFamily === Family.None) return undefined;
    for (const range of ranges) if (inRange(range)) return true;
    return false;
  };
}
