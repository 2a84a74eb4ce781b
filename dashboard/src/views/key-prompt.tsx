/** Asks for the admin key once per tab; a refused key says so plainly. */
import { useState } from 'preact/hooks';
import { Alerts, TextField } from '../components.js';

export function KeyPrompt({ refused, onSubmit }: { refused: boolean; onSubmit: (key: string) => Promise<void> }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <section class="narrow">
      <h1 tabIndex={-1}>Admin key</h1>
      <p>
        This Verdict requires its admin API key (<code>ADMIN_API_KEY</code>). It is kept for this browser tab only and
        sent as the <code>WAY-API-KEY</code> header.
      </p>
      <Alerts messages={refused ? ['Wrong admin key: Verdict refused it (401 Invalid API key). Check the key and try again.'] : []} />
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          await onSubmit(key);
          setBusy(false);
        }}
      >
        <TextField label="Admin API key" secret value={key} onValue={setKey} />
        <button type="submit" class="primary" disabled={busy || key === ''}>
          Continue
        </button>
      </form>
    </section>
  );
}
