/** Form pieces shared by the screens: labelled inputs with their message, alerts, a confirmed delete. */
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';

interface InputProps {
  label: string;
  value: string;
  onValue: (value: string) => void;
  error?: string;
  hint?: string;
  placeholder?: string;
  secret?: boolean;
  mono?: boolean;
  readOnly?: boolean;
}

function describedBy(id: string, error?: string, hint?: string): string | undefined {
  const ids = [hint === undefined ? '' : `${id}-hint`, error === undefined ? '' : `${id}-error`].filter((part) => part !== '');
  return ids.length === 0 ? undefined : ids.join(' ');
}

function Notes({ id, error, hint }: { id: string; error?: string; hint?: string }) {
  return (
    <>
      {hint !== undefined && <span class="hint" id={`${id}-hint`}>{hint}</span>}
      {error !== undefined && <span class="field-error" id={`${id}-error`}>{error}</span>}
    </>
  );
}

export function TextField({ label, value, onValue, error, hint, placeholder, secret, mono, readOnly }: InputProps) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        {...(secret ? { type: 'password' as const } : { type: 'text' as const })}
        class={mono ? 'mono' : undefined}
        value={value}
        placeholder={placeholder}
        readOnly={readOnly}
        aria-invalid={error !== undefined}
        aria-describedby={describedBy(id, error, hint)}
        onInput={(event) => onValue(event.currentTarget.value)}
      />
      <Notes id={id} error={error} hint={hint} />
    </div>
  );
}

export function TextArea({ label, value, onValue, error, hint, placeholder, rows = 4 }: InputProps & { rows?: number }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea
        id={id}
        class="mono"
        rows={rows}
        value={value}
        placeholder={placeholder}
        spellcheck={false}
        aria-invalid={error !== undefined}
        aria-describedby={describedBy(id, error, hint)}
        onInput={(event) => onValue(event.currentTarget.value)}
      />
      <Notes id={id} error={error} hint={hint} />
    </div>
  );
}

export function SelectField({ label, value, onValue, options, error }: InputProps & { options: readonly string[] }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} aria-invalid={error !== undefined} aria-describedby={describedBy(id, error)} onChange={(event) => onValue(event.currentTarget.value)}>
        {options.map((option) => (
          <option key={option} value={option}>
            {option === '' ? '(none)' : option}
          </option>
        ))}
      </select>
      <Notes id={id} error={error} />
    </div>
  );
}

/** Messages that belong to the whole form, announced when they appear. */
export function Alerts({ messages }: { messages: string[] }) {
  if (messages.length === 0) return null;
  return (
    <div class="alert" role="alert">
      {messages.length === 1 ? <p>{messages[0]}</p> : <ul>{messages.map((message) => <li key={message}>{message}</li>)}</ul>}
    </div>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  );
}

/**
 * A button that asks once more, in place, before it acts: `trigger` opens the question, `confirm` acts,
 * Cancel closes it. The confirming button takes the focus, so a keyboard user answers at once.
 */
export function ConfirmButton(props: {
  trigger: ComponentChildren;
  triggerClass?: string;
  question: ComponentChildren;
  group: string;
  confirm: string;
  confirmClass: 'danger' | 'primary';
  onConfirm: () => void;
}) {
  const [asking, setAsking] = useState(false);
  const confirm = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirm.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" class={props.triggerClass} onClick={() => setAsking(true)}>
        {props.trigger}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.group}>
      <span>{props.question}</span>
      <button type="button" class={props.confirmClass} ref={confirm} onClick={props.onConfirm}>
        {props.confirm}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** A delete button that asks once more, in place, before it acts. */
export function ConfirmDelete({ what, onConfirm }: { what: string; onConfirm: () => void }) {
  return (
    <ConfirmButton
      trigger="Delete"
      triggerClass="danger"
      question={`Delete ${what}? This cannot be undone.`}
      group="Confirm deletion"
      confirm="Yes, delete"
      confirmClass="danger"
      onConfirm={onConfirm}
    />
  );
}

/** A labelled local date and time, as the browser's own picker offers it. */
export function DateTimeField({ label, value, onValue }: { label: string; value: string; onValue: (value: string) => void }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} type="datetime-local" step={1} value={value} onInput={(event) => onValue(event.currentTarget.value)} />
    </div>
  );
}
