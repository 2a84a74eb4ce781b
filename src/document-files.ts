import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';

// The YAML parser is loaded with the first YAML document: a server whose settings name no YAML file
// (a sidecar on its store) never loads it.
const requireWhenUsed = createRequire(import.meta.url);

/** A file that cannot be read as the document it should be: the message names the file and the place. */
export class DocumentError extends Error {}

/** The value a JSON or YAML file holds (chosen by its extension); YAML may hold anything JSON can. */
export function readDocument(path: string): unknown {
  return parseDocument(path, readText(path));
}

export function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new DocumentError(`${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
}

/** `text`, read from `path`, parsed as the extension of `path` says. */
export function parseDocument(path: string, text: string): unknown {
  try {
    return extname(path) === '.json' ? JSON.parse(text) : (requireWhenUsed('yaml') as typeof import('yaml')).parse(text, { prettyErrors: true });
  } catch (error) {
    // YAML's first line ends with a colon that introduced the excerpt of the file it leaves out.
    throw new DocumentError(`${path}: ${(error as Error).message.split('\n')[0]!.replace(/:$/, '')}`);
  }
}
