import type { DecisionRequest, ExplainedDecision } from '../engine/index.js';
import { Undecidable } from '../errors.js';
import { AttributeValidators, type ResourceKnown } from './attribute-validators.js';
import type { SchemaDocument } from './schema-document.js';
import type { SchemaEnforcement } from '../config/config.js';

/**
 * A check whose attributes break the schema, under `reject`: it cannot be decided as asked, as a
 * supplied attribute that contradicts the registry cannot (400 for a check, a denial for a bulk item,
 * an AuthZEN evaluation denied with the error in its context).
 */
export class SchemaViolation extends Undecidable {
  constructor(readonly violations: readonly string[]) {
    super('schema', `The check breaks the attribute schema: ${violations.join('; ')}`);
  }
}

/** A schema document and how it is enforced. */
export interface SchemaSettings {
  document: SchemaDocument;
  enforcement: Exclude<SchemaEnforcement, 'off'>;
}

/** The attribute schemas applied to checks, as enforced; `violated` is told of each check that breaks them. */
export class RequestSchemas {
  private readonly validators: AttributeValidators;
  readonly enforcement: SchemaSettings['enforcement'];

  constructor(
    settings: SchemaSettings,
    private readonly violated: () => void = () => {},
  ) {
    this.validators = new AttributeValidators(settings.document);
    this.enforcement = settings.enforcement;
  }

  /** The document declares no schema at all. */
  get empty(): boolean {
    return this.validators.empty;
  }

  /**
   * What the check breaks (warn: to be shown in its explanation), after telling `violated`; throws
   * SchemaViolation under `reject`. A plan's request knows its resource in part (`partial`).
   */
  enforce(request: DecisionRequest, resourceKnown: ResourceKnown = 'whole'): readonly string[] {
    const violations = this.validators.violations(request, resourceKnown);
    if (violations.length === 0) return violations;
    this.violated();
    if (this.enforcement === 'reject') throw new SchemaViolation(violations);
    return violations;
  }

  /** What the check breaks (at most MAX_REPORTED_VIOLATIONS), told to nobody: a worker tells the front, which counts. */
  violations(request: DecisionRequest): readonly string[] {
    return this.validators.violations(request);
  }

  /** Whether the check breaks the schemas, told to nobody (a search's candidates). */
  breaks(request: DecisionRequest): boolean {
    return this.violations(request).length > 0;
  }

  /** What registering these attributes under `uri` breaks (see AttributeValidators.registeredViolations). */
  registeredViolations(uri: string, attributes: ReadonlyMap<string, unknown>): readonly string[] {
    return this.validators.registeredViolations(uri, attributes);
  }
}

/** The schemas of a document as enforced, or undefined when nothing is to be checked. */
export function requestSchemas(document: SchemaDocument | undefined, enforcement: SchemaEnforcement, violated?: () => void): RequestSchemas | undefined {
  if (document === undefined || enforcement === 'off') return undefined;
  const schemas = new RequestSchemas({ document, enforcement }, violated);
  return schemas.empty ? undefined : schemas;
}

/** The violations of the items of a bulk that broke the schemas (the others have none), by item index. */
export type ItemViolations = readonly { item: number; violations: readonly string[] }[];

/** An explained decision with the violations its check was decided despite (warn), after everything else it explains. */
export function withViolations(decision: ExplainedDecision, violations: readonly string[]): ExplainedDecision {
  if (violations.length === 0) return decision;
  return { ...decision, explain: { ...decision.explain, schema_violations: [...violations] } };
}
