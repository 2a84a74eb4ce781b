import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Policy } from '../schemas/policy.js';
import { DocumentError, parseDocument, readText } from '../document-files.js';
import { issuesInOneLine } from '../schemas/errors.js';
import { sharedSetIssues } from '../engine/shared-sets.js';
import type { PolicySetReader } from './policy-set.js';
import { readSchemaFileText, SCHEMAS_FILE_NAME, type SchemaFile } from '../attribute-schemas/schema-file.js';
import type { SchemaEnforcement } from '../config/config.js';
import { policySchemaProblems } from '../attribute-schemas/policy-problems.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';

/** The attribute schemas of a policy directory: their file (schemas.json beside the policies, or --schemas), and how they are enforced. */
export interface DirectorySchemas {
  file: SchemaFile;
  enforcement: SchemaEnforcement;
}

/**
 * Policy files: JSON or YAML. Names starting with `.` are skipped (a ConfigMap mount's `..data` and
 * its timestamped directories), and so is the schema document (see src/attribute-schemas/schema-file.ts).
 */
const POLICY_FILE = /^[^.].*\.(json|ya?ml)$/;

export type DirectoryContents =
  /**
   * `fingerprint` identifies the files' names and contents (the schema file's too), to tell a change
   * from a rescan of the same files; `schemas`, the attribute schema document (none: no schema file);
   * `schemaWarnings`, what the policies say that it contradicts (warn); `files`, the name of the file
   * each policy was read from, in the policies' order.
   */
  | { fingerprint: string; policies: Policy[]; files: string[]; schemas: SchemaDocument | undefined; schemaWarnings: string[] }
  | { fingerprint: string; problems: string[] };

/** The paths of the policy files of `dir`, in the order their policies are created: by file name. Throws when `dir` cannot be listed. */
export function policyFilesIn(dir: string): string[] {
  const names = readdirSync(dir).filter((name) => POLICY_FILE.test(name) && name !== SCHEMAS_FILE_NAME).sort();
  return names.map((name) => join(dir, name)).filter((path) => statSync(path, { throwIfNoEntry: false })?.isFile() ?? false);
}

/**
 * Every policy in the directory's policy files, in the order of the file names, then of the policies
 * in each file (a file holds one policy or a list), read as a policy write reads them, with the
 * attribute schema document of `schemas`' file, read each time as the policies are, and the policies
 * checked against it (but with enforcement off): what they contradict is a problem under `reject`, a
 * warning under `warn`. Symbolic links are followed. Problems name the file and the field (and, for
 * the schemas, the policy and the rule).
 */
export function readPolicyDirectory(dir: string, reader: PolicySetReader, schemas?: DirectorySchemas): DirectoryContents {
  let files: string[];
  try {
    files = policyFilesIn(dir);
  } catch (error) {
    return { fingerprint: `unreadable ${(error as Error).message}`, problems: [`${dir}: ${(error as Error).message}`] };
  }
  const texts = files.map((path) => {
    try {
      return { path, text: readText(path) };
    } catch (error) {
      return { path, text: '', problem: (error as Error).message };
    }
  });
  const schemaFile = schemas === undefined ? undefined : readSchemaFileText(schemas.file);
  const fingerprint = JSON.stringify([...texts.map(({ path, text }) => [path, text]), schemaFile?.text ?? null]);
  const unreadable = [...texts, ...(schemaFile === undefined ? [] : [schemaFile])].flatMap(({ problem }) => (problem === undefined ? [] : [problem]));
  if (unreadable.length > 0) return { fingerprint, problems: unreadable };
  const document = schemaFile?.document;
  const values: unknown[] = [];
  const labels: string[] = [];
  const fileNames: string[] = [];
  const problems: string[] = [];
  for (const { path, text } of texts) {
    try {
      const held = parseDocument(path, text);
      const policies = Array.isArray(held) ? held : [held];
      policies.forEach((policy, index) => {
        values.push(policy);
        labels.push(Array.isArray(held) ? `${path}: ${index}` : path);
        fileNames.push(basename(path));
      });
    } catch (error) {
      if (!(error instanceof DocumentError)) throw error;
      problems.push(error.message);
    }
  }
  if (problems.length > 0) return { fingerprint, problems };
  const read = reader.read(values, (index) => [labels[index]!]);
  if ('issues' in read) {
    return { fingerprint, problems: read.issues.map((issue) => issuesInOneLine([issue], 1)) };
  }
  // The directory is the whole set: what a policy takes from another must be defined there.
  const shared = read.policies.flatMap((policy, index) => (policy.shadow === undefined ? sharedSetIssues(policy, read.policies, [labels[index]!], reader.limits.maxConditionsPerRule) : []));
  if (shared.length > 0) return { fingerprint, problems: shared.map((issue) => issuesInOneLine([issue], 1)) };
  const schemaProblems = document === undefined || schemas!.enforcement === 'off' ? [] : policySchemaProblems(read.policies, labels, document);
  if (schemas?.enforcement === 'reject' && schemaProblems.length > 0) return { fingerprint, problems: schemaProblems };
  return { fingerprint, policies: read.policies, files: fileNames, schemas: document, schemaWarnings: schemaProblems };
}
