import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Policy } from '../schemas/policy.js';
import { DocumentError, parseDocument, readText } from '../documents.js';
import type { PolicySetReader } from '../services/policy-set.js';
import { SCHEMAS_FILE_NAME } from '../attribute-schemas/schema-file.js';
import type { SchemaSettings } from '../attribute-schemas/enforcement.js';
import { policySchemaProblems } from '../attribute-schemas/policy-problems.js';

/**
 * Policy files: JSON or YAML. Names starting with `.` are skipped (a ConfigMap mount's `..data` and
 * its timestamped directories), and so is the schema document (see src/attribute-schemas/schema-file.ts).
 */
const POLICY_FILE = /^[^.].*\.(json|ya?ml)$/;

export type DirectoryContents =
  /**
   * `fingerprint` identifies the files' names and contents, to tell a change from a rescan of the
   * same files; `schemaWarnings`, what the policies say that the attribute schemas contradict (warn).
   */
  | { fingerprint: string; policies: Policy[]; schemaWarnings: string[] }
  | { fingerprint: string; problems: string[] };

/**
 * Every policy in the directory's policy files, in the order of the file names, then of the policies
 * in each file (a file holds one policy or a list), read as a policy write reads them, and checked
 * against the attribute schemas when there are any: what they contradict is a problem under
 * `reject`, a warning under `warn`. Symbolic links are followed. Problems name the file and the
 * field (and, for the schemas, the policy and the rule).
 */
export function readPolicyDirectory(dir: string, reader: PolicySetReader, schemas?: SchemaSettings): DirectoryContents {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => POLICY_FILE.test(name) && name !== SCHEMAS_FILE_NAME).sort();
  } catch (error) {
    return { fingerprint: `unreadable ${(error as Error).message}`, problems: [`${dir}: ${(error as Error).message}`] };
  }
  const files = names.map((name) => join(dir, name)).filter((path) => statSync(path, { throwIfNoEntry: false })?.isFile() ?? false);
  const texts = files.map((path) => {
    try {
      return { path, text: readText(path) };
    } catch (error) {
      return { path, text: '', problem: (error as Error).message };
    }
  });
  const fingerprint = JSON.stringify(texts.map(({ path, text }) => [path, text]));
  const unreadable = texts.flatMap(({ problem }) => (problem === undefined ? [] : [problem]));
  if (unreadable.length > 0) return { fingerprint, problems: unreadable };
  const values: unknown[] = [];
  const labels: string[] = [];
  const problems: string[] = [];
  for (const { path, text } of texts) {
    try {
      const held = parseDocument(path, text);
      const policies = Array.isArray(held) ? held : [held];
      policies.forEach((policy, index) => {
        values.push(policy);
        labels.push(Array.isArray(held) ? `${path}: ${index}` : path);
      });
    } catch (error) {
      if (!(error instanceof DocumentError)) throw error;
      problems.push(error.message);
    }
  }
  if (problems.length > 0) return { fingerprint, problems };
  const read = reader.read(values, (index) => [labels[index]!]);
  if ('issues' in read) {
    return { fingerprint, problems: read.issues.map(({ loc: [file, ...field], msg }) => `${file}: ${field.length > 0 ? `${field.join('.')}: ` : ''}${msg}`) };
  }
  const schemaProblems = schemas === undefined ? [] : policySchemaProblems(read.policies, labels, schemas.document);
  if (schemas?.enforcement === 'reject' && schemaProblems.length > 0) return { fingerprint, problems: schemaProblems };
  return { fingerprint, policies: read.policies, schemaWarnings: schemaProblems };
}
