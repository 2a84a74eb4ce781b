import { ClientError, InvalidToken, Undecidable } from '../errors.js';
import type { Decision } from '../engine/index.js';

// How each surface answers a check that cannot be decided as asked (an Undecidable, of a kind), in
// one place: a new surface is a new line here, a new kind a new case.

/** Whether `error` is a check that cannot be decided as asked; anything else is rethrown by the callers below. */
const undecidable = (error: unknown): Undecidable => {
  if (error instanceof Undecidable) return error;
  throw error;
};

/** `/check`, `/plan`, the playground's `check-at`, an AuthZEN evaluation: the call is refused, 401 for a credential (with the challenge), else 400. */
export function refusedCall(error: unknown): never {
  const refused = undecidable(error);
  throw refused.kind === 'credential' ? new InvalidToken(refused.message) : new ClientError(400, refused.message);
}

/** An item of `/check/bulk` (and a check a policy test makes): denied, the reason saying why. */
export const deniedItem = (error: unknown): Decision => ({ allowed: false, reason: undecidable(error).message });

/** An item of AuthZEN's evaluations: denied, with the status `/check` would answer and why in its context. */
export function authzenItemError(error: unknown): { status: number; message: string } {
  const refused = undecidable(error);
  return { status: refused.kind === 'credential' ? 401 : 400, message: refused.message };
}

/** External authorization: 401 for a refused credential (the client may sign in again), else 403. */
export const extAuthzStatus = (error: unknown): 401 | 403 => (undecidable(error).kind === 'credential' ? 401 : 403);

/** A search's candidate, or a plan's principal: allowed nothing. */
export const allowsNothing = (error: unknown): false => {
  undecidable(error);
  return false;
};
