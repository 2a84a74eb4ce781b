/** In a rule's `actions`: every action. A check never names it (it is refused where a check is read). */
export const ANY_ACTION = '*';

/** Whether a rule's `actions` cover `action`. */
export const coversAction = (actions: readonly string[], action: string): boolean => actions.includes(action) || actions.includes(ANY_ACTION);
