/**
 * A check handed to the playground from another view: a recent denial from the live view, or a
 * changed check from an impact preview or the Shadow view with its two decisions to compare. Its
 * check is filled into the form. Held in memory for one screen change only (attribute values never
 * go into the address).
 */
import type { RecentDenial, SentSide } from './live-model.js';

export interface ReplayedSide {
  uri: string;
  /** JSON text for the attributes field. */
  attributes: string;
}

export interface ReplayedCheck {
  principal: ReplayedSide;
  resource: ReplayedSide;
  action: string;
  /** JSON text for the action's attributes and the context fields ('' for none). */
  actionAttributes: string;
  context: string;
  /** Attribute keys whose values the server did not keep (null in the form): the check cannot run as it was until they are filled in. */
  maskedKeys: string[];
  /** The decision's time, when the check was decided at a known time. */
  time?: string;
  /** Two decisions of the check to show side by side: by the policies in force and by others. */
  comparison?: { before: Compared; after: Compared };
}

/** One of two decisions compared, under its title, with its explanation when the server gave one. */
export interface Compared {
  title?: string;
  allowed: boolean;
  reason: string;
  explain?: Record<string, unknown>;
  explain_cut?: string;
}

/** A check as the server read it (uris, attributes, action, context, time), as an impact preview or the Shadow view gives it. */
interface CheckAsRead {
  principal?: { uri?: string; attributes?: Record<string, unknown> };
  resource?: { uri?: string; attributes?: Record<string, unknown> };
  action?: string;
  action_attributes?: Record<string, unknown>;
  context?: Record<string, unknown>;
  time?: string;
}

/** Attributes as JSON text for a form field ('' for none), the masked keys (given without values) as null. */
function attributesText(values: Record<string, unknown> | undefined, maskedKeys: string[] = []): string {
  const shown = values ?? Object.fromEntries(maskedKeys.map((key) => [key, null]));
  return Object.keys(shown).length === 0 ? '' : JSON.stringify(shown);
}

function side({ uri, attributes, attribute_keys }: SentSide): { side: ReplayedSide; masked: string[] } {
  const masked = attribute_keys ?? [];
  return { side: { uri: uri ?? '', attributes: attributesText(attributes, masked) }, masked };
}

export function replayOf(denial: RecentDenial): ReplayedCheck {
  const principal = side(denial.principal);
  const resource = side(denial.resource);
  const [actionKeys, contextKeys] = [denial.action_attribute_keys ?? [], denial.context_keys ?? []];
  return {
    principal: principal.side,
    resource: resource.side,
    action: denial.action,
    actionAttributes: attributesText(denial.action_attributes, actionKeys),
    context: attributesText(denial.context, contextKeys),
    maskedKeys: [
      ...principal.masked.map((key) => `principal ${key}`),
      ...resource.masked.map((key) => `resource ${key}`),
      ...actionKeys.map((key) => `action attribute ${key}`),
      ...contextKeys.map((key) => `context ${key}`),
    ],
  };
}

/** Hands `check`, decided as `before` and `after`, to the playground, which shows the two side by side. */
export function holdComparison({ check, before, after }: { check: Record<string, unknown>; before: Compared; after: Compared }): void {
  const read = check as CheckAsRead;
  const sideOf = (side: CheckAsRead['principal']): ReplayedSide => ({ uri: side?.uri ?? '', attributes: attributesText(side?.attributes) });
  holdReplay({
    principal: sideOf(read.principal),
    resource: sideOf(read.resource),
    action: read.action ?? '',
    actionAttributes: attributesText(read.action_attributes),
    context: attributesText(read.context),
    maskedKeys: [],
    ...(read.time !== undefined && { time: read.time }),
    comparison: { before, after },
  });
}

let pending: ReplayedCheck | undefined;

export function holdReplay(check: ReplayedCheck): void {
  pending = check;
}

/** The check handed over, once. */
export function takeReplay(): ReplayedCheck | undefined {
  const check = pending;
  pending = undefined;
  return check;
}
