/** What the policy screens say when policies come from files: they are changed there, not here. */
import { Notice } from '../components.js';

export function FilesNotice({ dir }: { dir: string }) {
  return (
    <Notice>
      Policies come from the files in <code>{dir}</code>: change them there, and Verdict applies them without a restart. Here they can be read,
      checked and tried, not written.
    </Notice>
  );
}
