import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';

/**
 * A Dockerfile carried out without Docker, for a test to follow what an image build does: each stage
 * gets a directory standing for its root filesystem; COPY copies from the build context or from an
 * earlier stage's directory; RUN runs its commands there with the stage's ENV. What only a container
 * can do is left out, and each such command is listed in `skipped`: installing the OS packages of the
 * base image (this machine has its own), and changing owners (the test does not switch users).
 */

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export interface Stage {
  name: string;
  /** The directory standing for this stage's `/`. */
  root: string;
  /** The container path WORKDIR last set. */
  workdir: string;
  env: Record<string, string>;
  /** Exec-form ENTRYPOINT, CMD and HEALTHCHECK CMD, as written. */
  entrypoint: string[];
  cmd: string[];
  healthcheck: string[];
}

export interface Build {
  stages: Stage[];
  /** Every RUN command carried out, with its output, in order. */
  ran: { command: string; output: string }[];
  /** Every RUN command left out, and why. */
  skipped: { command: string; why: string }[];
}

/** The instructions of a Dockerfile: continuation lines joined, comments and blank lines dropped. */
export function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (pending === undefined && (line === '' || line.startsWith('#'))) return;
    const continues = line.endsWith('\\');
    const part = continues ? line.slice(0, -1).trim() : line;
    pending = pending === undefined ? { text: part, line: index + 1 } : { ...pending, text: `${pending.text} ${part}` };
    if (continues) return;
    const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(pending.text)!;
    instructions.push({ keyword: keyword!.toUpperCase(), args: args!, line: pending.line });
    pending = undefined;
  });
  return instructions;
}

/** The variables one ENV instruction sets (its `NAME=value` pairs). */
export function variablesOf(envArgs: string): Record<string, string> {
  return Object.fromEntries(
    envArgs.split(/\s+/).map((pair) => {
      const [name, ...value] = pair.split('=');
      return [name!, value.join('=')];
    }),
  );
}

/** The variables the image (the last stage) sets. */
export function imageVariables(instructions: Instruction[]): Record<string, string> {
  const lastStage = instructions.slice(instructions.map((instruction) => instruction.keyword).lastIndexOf('FROM'));
  return Object.assign({}, ...lastStage.filter((instruction) => instruction.keyword === 'ENV').map((instruction) => variablesOf(instruction.args)));
}

/** What a container's command leaves out here, or undefined when the test runs it. */
function leftOut(words: string[]): string | undefined {
  if (words[0] === 'apt-get') return 'OS packages of the base image: this machine has its own';
  if (words[0] === 'rm' && words.some((word) => word.startsWith('/var/lib/apt/'))) return "apt's lists";
  if (words[0] === 'chown') return 'the test runs as its own user';
  return undefined;
}

function execForm(args: string, at: Instruction): string[] {
  try {
    const parsed: unknown = JSON.parse(args);
    if (Array.isArray(parsed) && parsed.every((part) => typeof part === 'string')) return parsed;
  } catch {
    // not JSON
  }
  throw new Error(`line ${at.line}: ${at.keyword} must be in exec form (a JSON array): ${args}`);
}

function runShell(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`RUN ${command} failed (exit ${code}):\n${output.slice(-4000)}`)),
    );
  });
}

/**
 * Carries out `instructions` with `context` as the build context, each stage's root under `scratch`.
 * `baseEnv` stands for the base image's environment; ENV adds to it.
 */
export async function followDockerfile(instructions: Instruction[], context: string, scratch: string, baseEnv: NodeJS.ProcessEnv): Promise<Build> {
  const build: Build = { stages: [], ran: [], skipped: [] };
  let stage: Stage | undefined;
  const inContainer = (current: Stage, path: string) => join(current.root, isAbsolute(path) ? path : join(current.workdir, path));

  for (const instruction of instructions) {
    const { keyword, args } = instruction;
    if (keyword === 'FROM') {
      const name = /\bAS\s+(\S+)/i.exec(args)?.[1] ?? `stage-${build.stages.length}`;
      stage = { name, root: join(scratch, name), workdir: '/', env: {}, entrypoint: [], cmd: [], healthcheck: [] };
      mkdirSync(stage.root, { recursive: true });
      build.stages.push(stage);
      continue;
    }
    if (stage === undefined) throw new Error(`line ${instruction.line}: ${keyword} before FROM`);
    const current = stage;
    switch (keyword) {
      case 'WORKDIR':
        current.workdir = isAbsolute(args) ? args : join(current.workdir, args);
        mkdirSync(workdirOf(current), { recursive: true });
        break;
      case 'ENV':
        Object.assign(current.env, variablesOf(args));
        break;
      case 'COPY': {
        const words = args.split(/\s+/);
        const from = words.find((word) => word.startsWith('--from='))?.slice('--from='.length);
        const paths = words.filter((word) => !word.startsWith('--'));
        const destination = paths.pop()!;
        const source = from === undefined ? undefined : build.stages.find((candidate) => candidate.name === from);
        if (from !== undefined && source === undefined) throw new Error(`line ${instruction.line}: no stage named ${from}`);
        const intoDirectory = destination.endsWith('/') || paths.length > 1;
        for (const path of paths) {
          const origin = source === undefined ? join(context, path) : inContainer(source, path);
          const target = inContainer(current, destination);
          const copyTo = intoDirectory && !statSync(origin).isDirectory() ? join(target, basename(path)) : target;
          mkdirSync(dirname(copyTo), { recursive: true });
          cpSync(origin, copyTo, { recursive: true });
        }
        break;
      }
      case 'RUN': {
        const env = { ...baseEnv, ...mapPaths(current, current.env) };
        for (const command of args.split('&&').map((part) => part.trim())) {
          const words = command.split(/\s+/);
          const why = leftOut(words);
          if (why !== undefined) {
            build.skipped.push({ command, why });
            continue;
          }
          const mapped = words.map((word) => (word.startsWith('/') ? join(current.root, word) : word)).join(' ');
          build.ran.push({ command, output: await runShell(mapped, workdirOf(current), env) });
        }
        break;
      }
      case 'ENTRYPOINT':
        current.entrypoint = execForm(args, instruction);
        break;
      case 'CMD':
        current.cmd = execForm(args, instruction);
        break;
      case 'HEALTHCHECK':
        current.healthcheck = execForm(args.slice(args.indexOf('CMD ') + 'CMD '.length), instruction);
        break;
      case 'USER':
      case 'VOLUME':
      case 'EXPOSE':
      case 'LABEL':
      case 'ARG':
        break;
      default:
        throw new Error(`line ${instruction.line}: ${keyword} is not followed by this test; teach test/helpers/dockerfile.ts`);
    }
  }
  return build;
}

/** A stage's variables with container paths (values starting with `/`) turned into paths under its root. */
export function mapPaths(stage: Stage, env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, value.startsWith('/') ? join(stage.root, value) : value]));
}

/** The directory standing for a stage's WORKDIR. */
export function workdirOf(stage: Stage): string {
  return join(stage.root, stage.workdir);
}
