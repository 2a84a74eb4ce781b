import { ClientError } from '../errors.js';

/**
 * What a client is told when the answer it asked for would be longer than its budget: what was too
 * large, and how to ask a narrower question.
 */

export function explanationsTooLarge(maxLength: number, checks: number): ClientError {
  const narrower = checks > 1 ? 'explain fewer checks per call (or none)' : 'ask without explain=true';
  return new ClientError(400, `The explanation${checks > 1 ? 's' : ''} would be longer than ${maxLength} characters: ${narrower}`);
}

export function planTooLarge(maxLength: number): ClientError {
  return new ClientError(
    400,
    `The plan would be longer than ${maxLength} characters, even with deny rules stated without the allow rules that exempt resources from them: ` +
      'too many rules could allow or deny this principal the action. Narrow the question: give what is known of the resources ' +
      '(resource.attributes), so that conditions on those attributes are decided rather than stated',
  );
}

export function plansTooLarge(maxLength: number, item: number): ClientError {
  return new ClientError(400, `The plans would be longer than ${maxLength} characters together (reached at item ${item}): send fewer items per call`);
}
