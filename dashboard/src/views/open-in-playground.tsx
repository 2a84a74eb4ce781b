/** A button that opens a check in the playground with two of its decisions shown side by side. */
import { holdComparison, type Compared } from '../replay.js';
import { go, links } from '../routes.js';

export function OpenInPlayground({ check, before, after }: { check: Record<string, unknown>; before: Compared; after: Compared }) {
  return (
    <button
      type="button"
      class="quiet"
      onClick={() => {
        holdComparison({ check, before, after });
        go(links.playground);
      }}
    >
      Open in the playground
    </button>
  );
}
