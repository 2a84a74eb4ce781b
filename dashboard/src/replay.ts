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
  /** JSON text for the action's attributes and the context fields ('' for none). */
  actionAttributes: string;
  context: string;
  /** Attribute keys whose values the server did not keep (null in the form): the check cannot run as it was until they are filled in. */
  maskedKeys: string[];
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
