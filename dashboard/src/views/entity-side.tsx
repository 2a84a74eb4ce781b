/** A principal or a resource of a check request: a registered uri, attributes typed as JSON, or both. */
import { TextArea, TextField } from '../components.js';
import { parseAttributes, type JsonValue } from '../json-text.js';

export interface SideDraft {
  uri: string;
  attributes: string;
  /** The principal's bearer token (a JWT), which the server verifies with its key sets (`--tokens`). */
  token?: string;
}

export const emptySide = (): SideDraft => ({ uri: '', attributes: '' });

export interface SideReference {
  uri?: string;
  attributes?: Record<string, JsonValue>;
  token?: string;
}

/** The side as the API takes it, or the message for its attributes field. */
function sideReference(side: SideDraft): { ok: true; reference: SideReference } | { ok: false; message: string } {
  const attributes = parseAttributes(side.attributes);
  if (!attributes.ok) return { ok: false, message: attributes.message };
  const reference: SideReference = {};
  if (side.uri.trim() !== '') reference.uri = side.uri.trim();
  if (attributes.value !== undefined) reference.attributes = attributes.value;
  if (side.token !== undefined && side.token.trim() !== '') reference.token = side.token.trim();
  return { ok: true, reference };
}

export interface CheckRequestBody {
  principal: SideReference;
  resource: SideReference;
  action: string | undefined;
  /** The action's attributes and the context, when the form has fields for them and they are filled in. */
  action_attributes?: Record<string, JsonValue>;
  context?: Record<string, JsonValue>;
}

/**
 * A check request (principal, resource, action) as the API takes it, or the messages for the
 * attributes fields that do not parse, keyed as EntitySide reads them. A blank action is left out.
 */
export function checkRequestBody(
  principal: SideDraft,
  resource: SideDraft,
  action: string,
): { ok: true; body: CheckRequestBody } | { ok: false; errors: Record<string, string> } {
  const principalReference = sideReference(principal);
  const resourceReference = sideReference(resource);
  if (!principalReference.ok || !resourceReference.ok) {
    const errors: Record<string, string> = {};
    if (!principalReference.ok) errors['principal.attributes'] = principalReference.message;
    if (!resourceReference.ok) errors['resource.attributes'] = resourceReference.message;
    return { ok: false, errors };
  }
  const trimmedAction = action.trim();
  return {
    ok: true,
    body: { principal: principalReference.reference, resource: resourceReference.reference, action: trimmedAction === '' ? undefined : trimmedAction },
  };
}

interface EntitySideProps {
  legend: 'Principal' | 'Resource';
  side: SideDraft;
  onChange: (side: SideDraft) => void;
  /** The form's field errors, keyed by `principal`, `principal.uri`, `principal.attributes`, and so on. */
  errors: Record<string, string | undefined>;
  example: string;
  /** A principal may also be given by a bearer token (checks and plans; not a simple policy). */
  withToken?: boolean;
}

export function EntitySide({ legend, side, onChange, errors: formErrors, example, withToken = false }: EntitySideProps) {
  const key = legend.toLowerCase();
  const errors = { side: formErrors[key], uri: formErrors[`${key}.uri`], attributes: formErrors[`${key}.attributes`], token: formErrors[`${key}.token`] };
  return (
    <fieldset>
      <legend>{legend}</legend>
      {errors.side !== undefined && <p class="field-error">{errors.side}</p>}
      <TextField
        label={`${legend} URI`}
        value={side.uri}
        onValue={(uri) => onChange({ ...side, uri })}
        error={errors.uri}
        hint="Optional: a registered entity's uri."
        placeholder={legend === 'Principal' ? 'user:alice' : 'laptop:42'}
      />
      <TextArea
        label={`${legend} attributes (JSON object)`}
        rows={3}
        value={side.attributes}
        onValue={(attributes) => onChange({ ...side, attributes })}
        error={errors.attributes}
        placeholder={example}
      />
      {withToken && (
        <TextField
          label="Principal token (JWT)"
          value={side.token ?? ''}
          onValue={(token) => onChange({ ...side, token })}
          error={errors.token}
          hint="Optional: a bearer token; its verified claims are the principal's claims attribute."
          placeholder="eyJhbGciOi…"
        />
      )}
    </fieldset>
  );
}
