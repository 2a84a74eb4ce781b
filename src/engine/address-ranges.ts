/** The most ranges one `in_cidr` value may list. */
export const MAX_ADDRESS_RANGES = 256;

/**
 * An IP address as four 32-bit words of its IPv6 form, an IPv4 address as its IPv4-mapped IPv6
 * address (`::ffff:a.b.c.d`), and its family: an address only ever falls in a range of its own
 * family, and an IPv4-mapped IPv6 address is the IPv4 address it maps.
 */
interface Address {
  words: [number, number, number, number];
  v4: boolean;
}

const DECIMAL_OCTET = /^(0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

function ipv4Word(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let word = 0;
  for (const part of parts) {
    if (!DECIMAL_OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    word = word * 256 + octet;
  }
  return word;
}

/** The eight 16-bit groups of an IPv6 address, an IPv4 tail counting as two; undefined when it is not one (zone ids included). */
function ipv6Groups(text: string): number[] | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string, last: boolean): number[] | undefined => {
    if (half === '') return [];
    const parts = half.split(':');
    const groups: number[] = [];
    for (let index = 0; index < parts.length; index++) {
      const part = parts[index]!;
      if (last && index === parts.length - 1 && part.includes('.')) {
        const word = ipv4Word(part);
        if (word === undefined) return undefined;
        groups.push(Math.floor(word / 65536), word % 65536);
      } else if (HEX_GROUP.test(part)) groups.push(parseInt(part, 16));
      else return undefined;
    }
    return groups;
  };
  const head = groupsOf(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? groupsOf(halves[1]!, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const missing = 8 - head.length - tail.length;
  return missing >= 1 ? [...head, ...Array<number>(missing).fill(0), ...tail] : undefined;
}

/** `text` as an address, or undefined when it is not an IPv4 or IPv6 address as written by people (no zone id). */
export function parseAddress(text: string): Address | undefined {
  const v4 = ipv4Word(text);
  if (v4 !== undefined) return { words: [0, 0, 0xffff, v4], v4: true };
  if (!text.includes(':')) return undefined;
  const groups = ipv6Groups(text);
  if (groups === undefined) return undefined;
  const words = [0, 1, 2, 3].map((index) => groups[2 * index]! * 65536 + groups[2 * index + 1]!) as Address['words'];
  return { words, v4: words[0] === 0 && words[1] === 0 && words[2] === 0xffff };
}

/** A range: the address it starts from and how many leading bits of the 128 an address must share with it. */
interface Range {
  start: Address;
  bits: number;
}

/** `text` (`10.16.0.0/12`, `2001:db8::/32`, or one address alone) as a range, or why it is not one. */
function parseRange(text: string): Range | string {
  const slash = text.indexOf('/');
  const start = parseAddress(slash === -1 ? text : text.slice(0, slash));
  if (start === undefined) return `'${text}' is not an IPv4 or IPv6 address or CIDR range`;
  const width = start.v4 && !text.slice(0, slash === -1 ? undefined : slash).includes(':') ? 32 : 128;
  if (slash === -1) return { start, bits: 128 };
  const prefix = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > width) return `'${text}' has a prefix length that is not 0 to ${width}`;
  return { start, bits: Number(prefix) + (128 - width) };
}

function contains(range: Range, address: Address): boolean {
  if (range.start.v4 !== address.v4) return false;
  for (let word = 0, left = range.bits; left > 0; word++, left -= 32) {
    const mask = left >= 32 ? 0xffffffff : ~(0xffffffff >>> left) >>> 0;
    if (((range.start.words[word]! & mask) >>> 0) !== ((address.words[word]! & mask) >>> 0)) return false;
  }
  return true;
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

/** Whether an address is in any of the ranges: false for anything but the text of an address. */
export type AddressTest = (attribute: unknown) => boolean;

/** The test of `value`, a range or a list of them that rangesIssue accepts. */
export function inRanges(value: unknown): AddressTest {
  const ranges = (Array.isArray(value) ? value : [value]).map((text) => parseRange(text as string) as Range);
  return (attribute) => {
    if (typeof attribute !== 'string') return false;
    const address = parseAddress(attribute);
    return address !== undefined && ranges.some((range) => contains(range, address));
  };
}

/** Whether the attribute is an address, of either family: `not_in_cidr` holds only for addresses. */
export const isAddress = (attribute: unknown): boolean => typeof attribute === 'string' && parseAddress(attribute) !== undefined;
