/**
 * Server validation messages placed next to the form fields they concern. A 422 body names each
 * offending field by `loc` (`["body", "rules", 0, "actions"]`); a field key is the same path after the
 * request part, dotted (`rules.0.actions`).
 */

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type?: string;
}

export interface PlacedIssues {
  /** Message per field key, for the fields the form shows. */
  byField: Record<string, string>;
  /** Messages no shown field can hold, with where the server says they belong. */
  unplaced: string[];
}

export function isValidationIssueList(detail: unknown): detail is ValidationIssue[] {
  return Array.isArray(detail) && detail.every((item) => typeof item === 'object' && item !== null && Array.isArray(item.loc));
}

export function fieldKeyOf(loc: (string | number)[]): string {
  return loc.slice(1).join('.');
}

/** Each issue goes to the shown field it names, or to the nearest shown field that contains it. */
export function placeIssues(issues: ValidationIssue[], fields: string[]): PlacedIssues {
  const placed: PlacedIssues = { byField: {}, unplaced: [] };
  for (const issue of issues) {
    const key = fieldKeyOf(issue.loc);
    const holder = fields
      .filter((field) => key === field || key.startsWith(`${field}.`))
      .sort((a, b) => b.length - a.length)[0];
    if (holder === undefined) placed.unplaced.push(key === '' ? issue.msg : `${key}: ${issue.msg}`);
    else placed.byField[holder] = placed.byField[holder] === undefined ? issue.msg : `${placed.byField[holder]}; ${issue.msg}`;
  }
  return placed;
}
