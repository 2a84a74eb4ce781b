import { dirname, join, resolve } from 'node:path';
import type { ValidateFunction } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify';
import type { Policy } from '../../schemas/policy.js';
import { policyTestFileSchema, type PolicyTestCase, type PolicyTestFile } from '../../schemas/policy-test.js';
import { createAjv, validationIssues } from '../../schemas/validation.js';
import { issuesInOneLine, type Location } from '../../schemas/errors.js';
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


let validateTestFile: ValidateFunction<PolicyTestFile> | undefined;

/** What `read` gives, or its DocumentError said as an error of the test file at `path`. */
function namingTheTestFile<T>(path: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw error instanceof DocumentError ? new DocumentError(`${path}: ${error.message}`) : error;
  }
}

/** Reads one test file and every policy file it names. Throws DocumentError saying what to fix, and where. */
export function loadTestFile(path: string, reader: PolicySetReader): LoadedTestFile {
  const content = readDocument(path);
  validateTestFile ??= createAjv(false).compile<PolicyTestFile>(policyTestFileSchema);
  if (!validateTestFile(content)) {
    const issues = validationIssues(validateTestFile.errors as FastifySchemaValidationError[], 'body');
    throw new DocumentError(`${path}: ${issuesInOneLine(issues.map((issue) => ({ ...issue, loc: issue.loc.slice(1) })))}`);
  }
  // Each source of policies, in order: the policies written inline, or the policies in a file.
  const sources = content.policies.map((entry, index) => {
    if (!('file' in entry)) return { label: `${path}: policies.${index}`, location: ['policies', index], values: [entry as unknown] };
    const file = resolve(dirname(path), entry.file as string);
    const held = namingTheTestFile(path, () => readDocument(join(dirname(path), entry.file as string)));
    const label = `policy file ${entry.file as string}`;
    return { label: file, location: [label], file, values: Array.isArray(held) ? held : [held] };
  });
  const values = sources.flatMap((source) => source.values);
  const labels = sources.flatMap((source) => source.values.map((_, index) => (source.values.length === 1 ? source.label : `${source.label}: ${index}`)));
  // Where an issue is: a field of this file (`policies.0.rules.1`), or a place in a policy file (`policy file x.yaml, item 1: rules.1`).
  const locations = sources.flatMap((source) =>
    source.values.map((_, index): Location => (source.values.length === 1 || !('file' in source) ? source.location : [`${source.location[0]}, item ${index}`])),
  );
  const read = reader.read(values, (index) => locations[index]!);
  if ('issues' in read) {
    const described = read.issues.map((issue) => issuesInOneLine([issue], String(issue.loc[0]).startsWith('policy file ') ? 1 : 0));
    throw new DocumentError(`${path}: ${described.join('; ')}`);
  }
  const entities = new Map<string, ReadonlyMap<string, unknown>>();
  content.entities.forEach((entity, index) => {
    const attributes = toAttributeMap(entity.attributes);
    if (attributes instanceof DuplicateAttribute) throw new DocumentError(`${path}: ${issuesInOneLine([attributes.issueAt(['entities', index, 'attributes'])])}`);
    if (entities.has(entity.uri)) throw new DocumentError(`${path}: entities.${index}.uri: '${entity.uri}' is registered earlier in this file`);
    entities.set(entity.uri, attributes);
  });
  const policyFiles = sources.flatMap((source) => (source.file === undefined ? [] : [source.file]));
  return { path, policies: read.policies, policyLabels: labels, policyFiles, entities, cases: content.cases };
}
