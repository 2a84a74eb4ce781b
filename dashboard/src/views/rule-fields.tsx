/** One rule of the policy editor: name, effect, actions and both lists of conditions. */
import { SelectField, TextArea, TextField } from '../components.js';
import { COMPARED_WITH, EFFECTS, emptyCondition, SIDES, takesNoValue, takesValueWithReference, type RuleDraft, type Side } from '../policy-draft.js';
import { useFirstOperator, useOperatorStyle } from '../access.js';
import { operatorChoices } from '../operator-style.js';

const SIDE_LABELS: Record<Side, string> = {
  principal_conditions: 'Principal conditions',
  resource_conditions: 'Resource conditions',
  action_conditions: 'Action conditions',
  context_conditions: 'Context conditions',
};
/** What each list is about, as the hint of an empty list and the label of its add button say it. */
const SIDE_NOUNS: Record<Side, string> = { principal_conditions: 'principal', resource_conditions: 'resource', action_conditions: 'action', context_conditions: 'context' };
/** A reference each list's conditions might compare with, shown as the example of its value_from field (any list may read any part of the check). */
const REFERENCE_EXAMPLES: Record<Side, string> = {
  principal_conditions: 'context.attributes.team',
  resource_conditions: 'principal.attributes.email',
  action_conditions: 'principal.attributes.level',
  context_conditions: 'principal.attributes.office',
};

/** A new group: two alternatives to fill in, in the server's spelling of equality. */
const groupTemplate = (operator: string) =>
  JSON.stringify(
    {
      any_of: [
        [{ path: 'attributes.role', operator, value: 'admin' }],
        [{ path: 'uri', operator, value_from: 'resource.attributes.owner' }],
      ],
    },
    null,
    2,
  );

interface RuleFieldsProps {
  index: number;
  rule: RuleDraft;
  errors: Record<string, string>;
  onChange: (rule: RuleDraft) => void;
  onRemove: () => void;
}

function FieldMessage({ error }: { error?: string }) {
  return error === undefined ? null : <p class="field-error">{error}</p>;
}

export function RuleFields({ index, rule, errors, onChange, onRemove }: RuleFieldsProps) {
  const at = `rules.${index}`;
  const style = useOperatorStyle();
  const firstOperator = useFirstOperator();
  const set = (change: Partial<RuleDraft>) => onChange({ ...rule, ...change });
  const setCondition = (side: Side, position: number, change: Partial<RuleDraft[Side][number]>) =>
    set({ [side]: rule[side].map((condition, i) => (i === position ? { ...condition, ...change } : condition)) });

  return (
    <fieldset class="rule">
      <legend>Rule {index + 1}</legend>
      <FieldMessage error={errors[at]} />
      <div class="row">
        <TextField label="Rule name" value={rule.name} onValue={(name) => set({ name })} error={errors[`${at}.name`]} placeholder="IT admins" />
        <SelectField label="Effect" value={rule.effect} onValue={(effect) => set({ effect })} options={EFFECTS} error={errors[`${at}.effect`]} />
        <TextField
          label="Actions"
          value={rule.actions}
          onValue={(actions) => set({ actions })}
          error={errors[`${at}.actions`]}
          hint="Comma-separated, e.g. read, write; * for every action"
          placeholder="administer"
        />
      </div>
      <TextField
        label="Rule description"
        value={rule.description}
        onValue={(description) => set({ description })}
        error={errors[`${at}.description`]}
        hint="Optional"
      />
      {SIDES.map((side) => (
        <fieldset class="conditions" key={side}>
          <legend>{SIDE_LABELS[side]}</legend>
          <FieldMessage error={errors[`${at}.${side}`]} />
          {rule[side].length === 0 && <p class="hint">None: any {SIDE_NOUNS[side]} matches.</p>}
          {rule[side].map((condition, position) => {
            const key = `${at}.${side}.${position}`;
            const removeButton = (
              <button
                type="button"
                class="quiet remove"
                aria-label={`Remove ${SIDE_LABELS[side].toLowerCase().replace(/s$/, '')} ${position + 1}`}
                onClick={() => set({ [side]: rule[side].filter((_, i) => i !== position) })}
              >
                Remove
              </button>
            );
            if (condition.group !== undefined) {
              return (
                <div class="condition" key={position}>
                  <FieldMessage error={errors[key]} />
                  <TextArea
                    label="Group (JSON)"
                    value={condition.group}
                    onValue={(group) => setCondition(side, position, { group })}
                    hint="any_of: holds when every condition of one alternative holds; none_of: when no alternative has them all"
                    rows={Math.min(12, condition.group.split('\n').length)}
                  />
                  {removeButton}
                </div>
              );
            }
            return (
              <div class="condition" key={position}>
                <FieldMessage error={errors[key]} />
                <div class="row">
                  <TextField
                    label="Path"
                    mono
                    value={condition.path}
                    onValue={(path) => setCondition(side, position, { path })}
                    error={errors[`${key}.path`]}
                    placeholder="attributes.department"
                  />
                  <SelectField
                    label="Operator"
                    value={condition.operator}
                    onValue={(operator) => setCondition(side, position, { operator })}
                    options={operatorChoices(style, condition.operator)}
                    error={errors[`${key}.operator`]}
                  />
                  {takesNoValue(condition.operator) ? (
                    <p class="hint">No value: {condition.operator === 'exists' ? 'holds when the attribute is there, whatever its value' : 'holds when the attribute is left out'}.</p>
                  ) : (
                    <SelectField
                      label="Compare with"
                      value={condition.comparedWith}
                      onValue={(comparedWith) => setCondition(side, position, { comparedWith: comparedWith as RuleDraft[Side][number]['comparedWith'] })}
                      options={COMPARED_WITH}
                    />
                  )}
                  {!takesNoValue(condition.operator) && (condition.comparedWith === 'value' || takesValueWithReference(condition.operator)) && (
                    <TextField
                      label={takesValueWithReference(condition.operator) ? 'Span (JSON)' : 'Value (JSON)'}
                      mono
                      value={condition.value}
                      onValue={(value) => setCondition(side, position, { value })}
                      error={errors[`${key}.value`]}
                      placeholder='"it"'
                    />
                  )}
                  {!takesNoValue(condition.operator) && condition.comparedWith === 'another attribute' && (
                    <TextField
                      label="Another attribute"
                      mono
                      value={condition.valueFrom}
                      onValue={(valueFrom) => setCondition(side, position, { valueFrom })}
                      error={errors[`${key}.value_from`]}
                      placeholder={REFERENCE_EXAMPLES[side]}
                    />
                  )}
                  {removeButton}
                </div>
              </div>
            );
          })}
          <button type="button" onClick={() => set({ [side]: [...rule[side], emptyCondition(firstOperator)] })}>
            Add {SIDE_NOUNS[side]} condition
          </button>
          <button type="button" class="quiet" onClick={() => set({ [side]: [...rule[side], { ...emptyCondition(firstOperator), group: groupTemplate(firstOperator) }] })}>
            Add {SIDE_NOUNS[side]} group
          </button>
        </fieldset>
      ))}
      <button type="button" class="quiet" onClick={onRemove}>
        Remove rule {index + 1}
      </button>
    </fieldset>
  );
}
