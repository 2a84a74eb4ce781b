import type { Policy, SetItem } from '../schemas/policy.js';
import { ALLOWED_BY_DEFAULT, DENIED_BY_DEFAULT, defaultDenial, type Decision } from './decisions.js';
import { or, not, type ConditionTree } from './condition-tree.js';

// Policies scoped to resource types (`resource_types`): their rules and their default effect speak
// only for checks on resources of those types. A resource's type is the part of its uri before the
// first `:` (`document:42` is a `document`; an AuthZEN resource's uri is `<type>:<id>`); a resource
// without a uri, or whose uri has no `:`, has no type, and only unscoped policies speak for it.

/** The type of a resource with `uri`, or undefined. */
export function resourceTypeOf(uri: string | undefined): string | undefined {
  if (uri === undefined) return undefined;
  const colon = uri.indexOf(':');
  return colon <= 0 ? undefined : uri.slice(0, colon);
}

/** The uri of the entity `id` of `type`, as an AuthZEN subject or resource names it: `<type>:<id>`, the form resourceTypeOf reads. */
export const entityUri = (type: string, id: string): string => `${type}:${id}`;

/** What a resource's uri starts with when it is of `type`. */
const typePrefix = (type: string) => entityUri(type, '');

/**
 * The resource condition a scoped policy adds before the others of each of its rules: the uri starts
 * with one of the types and a colon (a group for several). Undefined for a policy without a scope.
 */
export function scopeCondition(policy: Policy): SetItem | undefined {
  const types = policy.resource_types;
  if (types === undefined) return undefined;
  const startsWith = (type: string) => ({ path: 'uri', operator: 'startswith' as const, value: typePrefix(type) });
  return types.length === 1 ? startsWith(types[0]!) : { any_of: types.map((type) => [startsWith(type)]) };
}

/** How many policies speak for some checks, and how many of them default to deny, and to allow (the others have no default: `none`). */
export interface Defaults {
  count: number;
  denying: number;
  allowing: number;
}

export const NO_DEFAULTS: Defaults = { count: 0, denying: 0, allowing: 0 };

/** `defaults` with `policy` counted (`sign` 1) or no longer counted (-1). */
export const counted = (defaults: Defaults, policy: Policy, sign: 1 | -1): Defaults => ({
  count: defaults.count + sign,
  denying: defaults.denying + (policy.default_effect === 'deny' ? sign : 0),
  allowing: defaults.allowing + (policy.default_effect === 'allow' ? sign : 0),
});

const sum = (one: Defaults, other: Defaults): Defaults => ({ count: one.count + other.count, denying: one.denying + other.denying, allowing: one.allowing + other.allowing });

/** Whether the policies counted allow what no rule decided: none defaults to deny, and one to allow. */
const allowByDefault = (defaults: Defaults) => defaults.denying === 0 && defaults.allowing > 0;

/**
 * The decision of the policies counted when no rule of theirs decides: a deny default anywhere denies,
 * else an allow default allows, else (every one `none`) it is denied. Undefined when none is counted.
 */
export function defaultDecisionOf(defaults: Defaults): Decision | undefined {
  if (defaults.count === 0) return undefined;
  return allowByDefault(defaults) ? ALLOWED_BY_DEFAULT : DENIED_BY_DEFAULT;
}

/**
 * The default effects where some policies are scoped: those of the unscoped policies, which speak for
 * every check, and those of the scoped ones, by type. A snapshot without scoped policies has none.
 */
export class ScopedDefaults {
  private constructor(
    private readonly unscoped: Defaults,
    private readonly byType: ReadonlyMap<string, Defaults>,
  ) {}

  /** Those of `policies`, or undefined when none is scoped. */
  static of(policies: readonly Policy[]): ScopedDefaults | undefined {
    return new ScopedDefaults(NO_DEFAULTS, new Map()).with(policies, []);
  }

  /** These defaults with `added` policies counted and `removed` ones not; undefined when no policy is scoped any more. */
  with(addedPolicies: readonly Policy[], removedPolicies: readonly Policy[]): ScopedDefaults | undefined {
    let unscoped = this.unscoped;
    const byType = new Map(this.byType);
    const count = (policy: Policy, sign: 1 | -1) => {
      if (policy.resource_types === undefined) unscoped = counted(unscoped, policy, sign);
      else for (const type of policy.resource_types) byType.set(type, counted(byType.get(type) ?? NO_DEFAULTS, policy, sign));
    };
    for (const policy of removedPolicies) count(policy, -1);
    for (const policy of addedPolicies) count(policy, 1);
    for (const [type, defaults] of byType) if (defaults.count === 0) byType.delete(type);
    return byType.size === 0 ? undefined : new ScopedDefaults(unscoped, byType);
  }

  /** The default decision for a check on the resource with `uri`. */
  fallbackFor(uri: string | undefined): Decision {
    const type = resourceTypeOf(uri);
    const scoped = type === undefined ? undefined : this.byType.get(type);
    return defaultDecisionOf(sum(this.unscoped, scoped ?? NO_DEFAULTS)) ?? this.uncoveredDecision(type);
  }

  /** The policies that speak for checks on resources of `type` (undefined: without a type), in `policies`' order. */
  speakingFor(policies: readonly Policy[], type: string | undefined): Policy[] {
    return policies.filter((policy) => policy.resource_types === undefined || (type !== undefined && policy.resource_types.includes(type)));
  }

  /**
   * The resources whose default allows, as a plan states them: those of each type whose speaking
   * policies allow by default, and, where the unscoped policies allow by default, those of no scoped type.
   */
  fallbackAllows(): ConditionTree {
    if (this.unscoped.denying > 0) return false;
    const ofType = (type: string): ConditionTree => ({ path: 'uri', operator: 'startswith', value: typePrefix(type) });
    const types = [...this.byType].map(([type, defaults]) => ({ type, allows: allowByDefault(sum(this.unscoped, defaults)) }));
    if (allowByDefault(this.unscoped)) return not(or(types.filter(({ allows }) => !allows).map(({ type }) => ofType(type))));
    return or(types.filter(({ allows }) => allows).map(({ type }) => ofType(type)));
  }

  /** Not kept: the types a client may name are without number. */
  private uncoveredDecision(type: string | undefined): Decision {
    return type === undefined ? UNTYPED_UNCOVERED : defaultDenial(`Action denied by default: no policy covers resources of type '${shown(type)}'`);
  }
}

/** A type as a reason names it: a long one cut short. */
const shown = (type: string) => (type.length <= MAX_SHOWN_TYPE ? type : `${type.slice(0, MAX_SHOWN_TYPE)}…`);
const MAX_SHOWN_TYPE = 100;

const UNTYPED_UNCOVERED = defaultDenial('Action denied by default: every policy is scoped to resource types, and the resource has none (no uri of the form <type>:<id>)');
