/** One rule of the policy editor: name, effect, actions and both lists of conditions. */
import { SelectField, TextField } from '../components.js';
import { EFFECTS, emptyCondition, SIDES, takesNoValue, type RuleDraft, type Side } from '../policy-draft.js';
import { useFirstOperator, useOperatorStyle } from '../access.js';
import { operatorChoices } from '../operator-style.js';

const SIDE_LABELS: Record<Side, string> = { principal_conditions: 'Principal conditions', resource_conditions: 'Resource conditions' };

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
          hint="Comma-separated, e.g. read, write"
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
          {rule[side].length === 0 && <p class="hint">None: any {side === 'principal_conditions' ? 'principal' : 'resource'} matches.</p>}
          {rule[side].map((condition, position) => {
            const key = `${at}.${side}.${position}`;
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
                    <TextField
                      label="Value (JSON)"
                      mono
                      value={condition.value}
                      onValue={(value) => setCondition(side, position, { value })}
                      error={errors[`${key}.value`]}
                      placeholder='"it"'
                    />
                  )}
                  <button
                    type="button"
                    class="quiet remove"
                    aria-label={`Remove ${SIDE_LABELS[side].toLowerCase().replace(/s$/, '')} ${position + 1}`}
                    onClick={() => set({ [side]: rule[side].filter((_, i) => i !== position) })}
                  >
                    Remove
                  </button>
                </div>
              </div>
            );
          })}
          <button type="button" onClick={() => set({ [side]: [...rule[side], emptyCondition(firstOperator)] })}>
            Add {side === 'principal_conditions' ? 'principal' : 'resource'} condition
          </button>
        </fieldset>
      ))}
      <button type="button" class="quiet" onClick={onRemove}>
        Remove rule {index + 1}
      </button>
    </fieldset>
  );
}
