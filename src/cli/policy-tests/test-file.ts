import { dirname, resolve } from 'node:path';
import type { ValidateFunction } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify';
import type { Policy } from '../../schemas/policy.js';
import { policyTestFileSchema, type PolicyTestCase, type PolicyTestFile } from '../../schemas/policy-test.js';
import { createAjv, validationIssues } from '../../schemas/validation.js';
import type { ValidationIssue } from '../../schemas/errors.js';
import { DocumentError, readDocument } from '../../document-files.js';
import type { PolicySetReader } from '../../policy-files/policy-set.js';
import { DuplicateAttribute, toAttributeMap } from '../../requests/attributes.js';

/** A test file ready to run: its policies read as a write would, its entities as the registry holds them. */
export interface LoadedTestFile {
  path: string;
  policies: Policy[];
  /** Where each policy was written: its file (and index in it), or the test file and its place there. */
  policyLabels: string[];
  /** The policy files it names, as paths from here. */
  policyFiles: string[];
  entities: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
  cases: PolicyTestCase[];
}

const describeIssues = (issues: ValidationIssue[]) => issues.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ');

let validateTestFile: ValidateFunction<PolicyTestFile> | undefined;

/** Reads one test file and every policy file it names. Throws DocumentError saying what to fix, and where. */
export function loadTestFile(path: string, reader: PolicySetReader): LoadedTestFile {
  const content = readDocument(path);
  validateTestFile ??= createAjv(false).compile<PolicyTestFile>(policyTestFileSchema);
  if (!validateTestFile(content)) {
    const issues = validationIssues(validateTestFile.errors as FastifySchemaValidationError[], 'body');
    throw new DocumentError(`${path}: ${describeIssues(issues.map((issue) => ({ ...issue, loc: issue.loc.slice(1) })))}`);
  }
  // Each source of policies, in order: the policies written inline, or the policies in a file.
  const sources = content.policies.map((entry, index) => {
    if (!('file' in entry)) return { label: `${path}: policies.${index}`, values: [entry as unknown] };
    const file = resolve(dirname(path), entry.file as string);
    const held = readDocument(file);
    return { label: file, file, values: Array.isArray(held) ? held : [held] };
  });
  const values = sources.flatMap((source) => source.values);
  const labels = sources.flatMap((source) => source.values.map((_, index) => (source.values.length === 1 ? source.label : `${source.label}: ${index}`)));
  const read = reader.read(values, (index) => [labels[index]!]);
  if ('issues' in read) throw new DocumentError(describeIssues(read.issues));
  const entities = new Map<string, ReadonlyMap<string, unknown>>();
  content.entities.forEach((entity, index) => {
    const attributes = toAttributeMap(entity.attributes);
    if (attributes instanceof DuplicateAttribute) throw new DocumentError(`${path}: ${describeIssues([attributes.issueAt(['entities', index, 'attributes'])])}`);
    if (entities.has(entity.uri)) throw new DocumentError(`${path}: entities.${index}.uri: '${entity.uri}' is registered earlier in this file`);
    entities.set(entity.uri, attributes);
  });
  const policyFiles = sources.flatMap((source) => (source.file === undefined ? [] : [source.file]));
  return { path, policies: read.policies, policyLabels: labels, policyFiles, entities, cases: content.cases };
}
