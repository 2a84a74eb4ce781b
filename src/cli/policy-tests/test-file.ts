import { basename, dirname, join, resolve } from 'node:path';
import type { ValidateFunction } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify';
import type { Policy } from '../../schemas/policy.js';
import { policyTestFileSchema, type PolicyTestCase, type PolicyTestFile } from '../../schemas/policy-test.js';
import { createAjv, validationIssues } from '../../schemas/validation.js';
import { issuesInOneLine, type Location } from '../../schemas/errors.js';
import { DocumentError, readDocument } from '../../document-files.js';
import type { PolicySetReader } from '../../policy-files/policy-set.js';
import { policyFilesIn } from '../../policy-files/read-directory.js';
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

/** The policy files of the directory a test file at `path` names, each as written from the test file's directory. */
function filesOfDirectory(path: string, directory: string): string[] {
  try {
    return policyFilesIn(join(dirname(path), directory)).map((file) => join(directory, basename(file)));
  } catch (error) {
    throw new DocumentError(`${path}: policy directory ${directory}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (error as Error).message}`);
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
  // Each source of policies, in order: the policies written inline, or the policies in a file (a directory is its files).
  interface Source {
    label: string;
    location: Location;
    file?: string;
    values: unknown[];
  }
  const policyFile = (written: string): Source => {
    const held = namingTheTestFile(path, () => readDocument(join(dirname(path), written)));
    return { label: resolve(dirname(path), written), location: [`policy file ${written}`], file: resolve(dirname(path), written), values: Array.isArray(held) ? held : [held] };
  };
  const sources = content.policies.flatMap((entry, index): Source[] => {
    if ('file' in entry) return [policyFile(entry.file as string)];
    if ('directory' in entry) return filesOfDirectory(path, entry.directory as string).map(policyFile);
    return [{ label: `${path}: policies.${index}`, location: ['policies', index], values: [entry as unknown] }];
  });
  const values = sources.flatMap((source) => source.values);
  const labels = sources.flatMap((source) => source.values.map((_, index) => (source.values.length === 1 ? source.label : `${source.label}: ${index}`)));
  // Where an issue is: a field of this file (`policies.0.rules.1`), or a place in a policy file (`policy file x.yaml, item 1: rules.1`).
  const locations = sources.flatMap((source) =>
    source.values.map((_, index): Location => (source.values.length === 1 || source.file === undefined ? source.location : [`${source.location[0]}, item ${index}`])),
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
