import { EventEmitter } from 'node:events';
import { watch } from 'node:fs';
import type { Policy } from '../schemas/policy.js';
import type { LoadedPolicies, PolicyReads } from '../store/store.js';
import type { PolicySource } from '../snapshot/policy-source.js';
import { PolicySetReader } from './policy-set.js';
import type { PolicyLimits } from '../engine/index.js';
import { ConfigError } from '../config/config.js';
import { readPolicyDirectory, type DirectorySchemas } from './read-directory.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';

/** Changes come in bursts (an editor's temporary file and rename, a ConfigMap's symlink swap): read once they settle. */
const SETTLE_MS = 50;
/** Read again this often even without a file event: some filesystems (network mounts) send none. */
const RESCAN_MS = 2000;

/** The files on disk are not in force: what is wrong with them, since when. */
export interface RejectedFiles {
  since: number;
  problems: string[];
}

interface DirectoryEvents {
  /** A new set of policies, with its revision, is in force (see schemaWarnings). */
  applied: [number];
  /** The files changed but cannot all be read as policies: the last good set stays in force. */
  rejected: [RejectedFiles];
}

/**
 * A directory of policy files as the source of the whole policy set (`--policies`), with the attribute
 * schema document of its schema file when it has one: read at start, read again whenever its files (or
 * the schema file) change. A change is taken only when every file is valid; otherwise the last good set
 * stays, and `rejected` says why. Each set taken gets the next revision, and carries its schemas.
 */
export class PolicyDirectory extends EventEmitter<DirectoryEvents> implements PolicySource {
  /** Set while the files on disk are not in force. */
  rejected: RejectedFiles | undefined;
  private seen: string;

  private constructor(
    readonly dir: string,
    private readonly store: PolicyReads,
    private readonly reader: PolicySetReader,
    private readonly schemas: DirectorySchemas | undefined,
    private inForce: { policies: Policy[]; files: string[]; revision: number; schemas: SchemaDocument | undefined; schemaWarnings: string[] },
    fingerprint: string,
  ) {
    super();
    this.seen = fingerprint;
  }

  /**
   * Throws ConfigError when the files cannot all be read as policies (or the schema file as a schema
   * document, or, under `reject`, the policies contradict it): there is no last good set to serve yet.
   */
  static open(dir: string, store: PolicyReads, limits: PolicyLimits, schemas?: DirectorySchemas): PolicyDirectory {
    const reader = new PolicySetReader(limits);
    const contents = readPolicyDirectory(dir, reader, schemas);
    if ('problems' in contents) throw new ConfigError(`--policies (POLICIES_DIR) ${dir}: ${contents.problems.join('; ')}`);
    const { policies, files, schemas: document, schemaWarnings } = contents;
    return new PolicyDirectory(dir, store, reader, schemas, { policies, files, revision: 1, schemas: document, schemaWarnings }, contents.fingerprint);
  }

  /** What the policies in force say that the attribute schemas contradict, under `warn`: to be logged. */
  get schemaWarnings(): readonly string[] {
    return this.inForce.schemaWarnings;
  }

  /** Every policy in force, the shadows among them, in creation order. */
  get policies(): readonly Policy[] {
    return this.inForce.policies;
  }

  /** The file of this directory that holds the policy named, if one does. */
  fileOf(name: string): string | undefined {
    const index = this.inForce.policies.findIndex((policy) => policy.name === name);
    return index < 0 ? undefined : this.inForce.files[index];
  }

  /**
   * The set in force, always whole, with its schemas. The feed position is the store's: entities still
   * live there, and their changes are followed from it.
   */
  async loadPolicies(): Promise<LoadedPolicies> {
    const { feedPosition } = await this.store.loadPolicies();
    const { policies, revision, schemas } = this.inForce;
    return { policies, revision, feedPosition, ...(schemas && { schemas: { document: schemas, version: 0 } }) };
  }

  async policyRevision(): Promise<number> {
    return this.inForce.revision;
  }

  /** Reads the files again and takes them if they changed and are valid. */
  rescan(): void {
    const contents = readPolicyDirectory(this.dir, this.reader, this.schemas);
    if (contents.fingerprint === this.seen) return;
    this.seen = contents.fingerprint;
    if ('problems' in contents) {
      this.rejected = { since: Date.now(), problems: contents.problems };
      this.emit('rejected', this.rejected);
      return;
    }
    this.rejected = undefined;
    this.inForce = { policies: contents.policies, files: contents.files, revision: this.inForce.revision + 1, schemas: contents.schemas, schemaWarnings: contents.schemaWarnings };
    this.emit('applied', this.inForce.revision);
  }

  /**
   * Follows changes: a file event on the directory (a ConfigMap update swaps the `..data` symlink
   * inside it, which is such an event), then a periodic rescan as a safety net. Returns a stop function.
   */
  watch(): () => void {
    let settling: NodeJS.Timeout | undefined;
    const soon = () => {
      clearTimeout(settling);
      settling = setTimeout(() => this.rescan(), SETTLE_MS);
    };
    const watcher = watch(this.dir, soon);
    // The directory itself went away: the rescans report it (and pick it up again if it comes back).
    watcher.on('error', soon);
    const rescans = setInterval(() => this.rescan(), RESCAN_MS).unref();
    return () => {
      watcher.close();
      clearInterval(rescans);
      clearTimeout(settling);
    };
  }
}
