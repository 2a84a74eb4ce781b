import type { ValidationIssue } from '../schemas/errors.js';

/**
 * Told what an accepted write contradicts of the attribute schemas under `--schema-enforcement warn`
 * (under `reject` the same issues refuse it): the write is made, and its answer says so.
 */
export type WriteWarnings = (issues: readonly ValidationIssue[]) => void;
