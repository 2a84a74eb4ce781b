/**
 * A recent denial handed from the live view to the playground: its check filled into the form.
 * Held in memory for one screen change only (attribute values never go into the address).
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
  /** Attribute keys whose values the server did not keep (null in the form): the check cannot run as it was until they are filled in. */
  maskedKeys: string[];
}

function side({ uri, attributes, attribute_keys }: SentSide): { side: ReplayedSide; masked: string[] } {
  const masked = attribute_keys ?? [];
  const values = attributes ?? Object.fromEntries(masked.map((key) => [key, null]));
  return { side: { uri: uri ?? '', attributes: Object.keys(values).length === 0 ? '' : JSON.stringify(values) }, masked };
}

export function replayOf(denial: RecentDenial): ReplayedCheck {
  const principal = side(denial.principal);
  const resource = side(denial.resource);
  return {
    principal: principal.side,
    resource: resource.side,
    action: denial.action,
    maskedKeys: [...principal.masked.map((key) => `principal ${key}`), ...resource.masked.map((key) => `resource ${key}`)],
  };
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
