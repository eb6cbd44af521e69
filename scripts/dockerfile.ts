/**
 * A strict reader of the repository's `Dockerfile` and `.dockerignore`, for checks that run without
 * Docker (test/unit/dockerfile.test.ts, scripts/image-build-check.ts). The Dockerfile's syntax —
 * comments, `\` continuations, the escape directive, flags, quoting in `ENV`, the image reference of
 * `FROM` — is read by `dockerfile-ast` (the parser of the Docker language server); this module accepts
 * only the instructions the Dockerfile uses, in the forms it uses them, and refuses anything else
 * with the line number, so a new instruction form is a deliberate change here too:
 *
 * - `FROM <image>[:<tag>] [AS <name>]`, `WORKDIR <abs path>`, `USER <name>[:<group>]`,
 *   `EXPOSE <port>...`, `VOLUME ["<path>", ...]`;
 * - `COPY [--from=<stage>] <src>... <dest>` (no globs, no `--chown` / `--chmod`);
 * - `ENV <key>=<value> ...` (not the legacy `ENV <key> <value>`);
 * - `RUN <shell command>` (shell form);
 * - `CMD`, `ENTRYPOINT` and `HEALTHCHECK [--interval=… --timeout=… --start-period=… --retries=…] CMD`
 *   in exec (JSON array) form only.
 *
 * Deliberately does not: expand `ARG` or `${…}` variables, accept heredocs, or implement
 * .dockerignore's full pattern language (only paths and `*` globs; see {@link dockerignored}): no
 * well-kept library reads .dockerignore as Docker does (`@balena/dockerignore` is unmaintained since
 * 2020), and the subset is a dozen lines.
 */
import { DockerfileParser, From, ModifiableInstruction, PropertyInstruction, type Instruction as AstInstruction } from 'dockerfile-ast';

/** One instruction: `op` upper-case, `line` 1-based where it starts. */
export type Instruction =
  | { op: 'FROM'; line: number; image: string; tag: string | undefined; name: string | undefined }
  | { op: 'WORKDIR'; line: number; path: string }
  | { op: 'USER'; line: number; user: string }
  | { op: 'EXPOSE'; line: number; ports: number[] }
  | { op: 'VOLUME'; line: number; paths: string[] }
  | { op: 'COPY'; line: number; from: string | undefined; sources: string[]; dest: string }
  | { op: 'ENV'; line: number; vars: Record<string, string> }
  | { op: 'RUN'; line: number; command: string }
  | { op: 'CMD'; line: number; argv: string[] }
  | { op: 'ENTRYPOINT'; line: number; argv: string[] }
  | { op: 'HEALTHCHECK'; line: number; options: Record<string, string>; argv: string[] };

/** A build stage: its `FROM` and the instructions after it. */
export interface Stage {
  from: Extract<Instruction, { op: 'FROM' }>;
  instructions: Instruction[];
}

/** Thrown for anything outside the forms listed in the module comment; the message names the line. */
export class DockerfileError extends Error {
  constructor(line: number, message: string) {
    super(`Dockerfile line ${line}: ${message}`);
    this.name = 'DockerfileError';
  }
}

function execForm(line: number, op: string, text: string): string[] {
  let argv: unknown;
  try {
    argv = JSON.parse(text);
  } catch {
    throw new DockerfileError(line, `${op} must be in exec form (a JSON array of strings), got: ${text}`);
  }
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a): a is string => typeof a === 'string'))
    throw new DockerfileError(line, `${op} must be a non-empty JSON array of strings`);
  return argv;
}

/** The flags of `ins` as `name → value`, refusing any not in `allowed`. */
function flagsOf(ins: AstInstruction, line: number, op: string, allowed: readonly string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (const f of ins instanceof ModifiableInstruction ? ins.getFlags() : []) {
    const value = f.getValue();
    if (!allowed.includes(f.getName()) || value === null) throw new DockerfileError(line, `${op} flag not supported here: ${f.toString()}`);
    flags[f.getName()] = value;
  }
  return flags;
}

function parseInstruction(ins: AstInstruction): Instruction {
  const line = ins.getRange().start.line + 1;
  const op = ins.getKeyword().toUpperCase();
  const rest = (ins.getArgumentsContent() ?? '').trim();
  const words = ins.getArguments().map((a) => a.getValue());
  switch (op) {
    case 'FROM': {
      const image = ins instanceof From ? ins.getImageName() : null;
      const stageForm = words.length === 1 || (words.length === 3 && words[1]!.toUpperCase() === 'AS');
      if (!(ins instanceof From) || image === null || !stageForm || ins.getImageDigest() !== null)
        throw new DockerfileError(line, `FROM <image>[:<tag>] [AS <name>] expected, got: ${rest}`);
      flagsOf(ins, line, op, []);
      const registry = ins.getRegistry();
      return {
        op,
        line,
        image: registry === null ? image : `${registry}/${image}`,
        tag: ins.getImageTag() ?? undefined,
        name: ins.getBuildStage() ?? undefined,
      };
    }
    case 'WORKDIR':
      if (words.length !== 1 || !rest.startsWith('/')) throw new DockerfileError(line, 'WORKDIR needs one absolute path');
      return { op, line, path: rest };
    case 'USER':
      if (words.length !== 1) throw new DockerfileError(line, 'USER takes one user[:group]');
      return { op, line, user: rest };
    case 'EXPOSE': {
      const ports = words.map(Number);
      if (!ports.every((p) => Number.isInteger(p) && p > 0 && p < 65536)) throw new DockerfileError(line, 'EXPOSE takes TCP port numbers');
      return { op, line, ports };
    }
    case 'VOLUME':
      return { op, line, paths: execForm(line, op, rest) };
    case 'COPY': {
      const from = flagsOf(ins, line, op, ['from'])['from'];
      if (words.length < 2) throw new DockerfileError(line, 'COPY needs at least one source and a destination');
      if (words.some((a) => /[*?[]/.test(a))) throw new DockerfileError(line, 'COPY sources must be plain paths (no globs)');
      return { op, line, from, sources: words.slice(0, -1), dest: words.at(-1)! };
    }
    case 'ENV': {
      const vars: Record<string, string> = {};
      for (const p of ins instanceof PropertyInstruction ? ins.getProperties() : []) {
        const value = p.getValue();
        if (p.getAssignmentOperator() !== '=' || value === null) throw new DockerfileError(line, `ENV takes key=value pairs, got: ${rest}`);
        vars[p.getName()] = value;
      }
      return { op, line, vars };
    }
    case 'RUN':
      if (rest.startsWith('[')) throw new DockerfileError(line, 'RUN is expected in shell form here');
      if (rest.startsWith('<<')) throw new DockerfileError(line, 'RUN heredocs are not read here');
      return { op, line, command: rest };
    case 'CMD':
    case 'ENTRYPOINT':
      return { op, line, argv: execForm(line, op, rest) };
    case 'HEALTHCHECK': {
      const options = flagsOf(ins, line, op, ['interval', 'timeout', 'start-period', 'retries']);
      const c = /^CMD\s+(.*)$/s.exec(rest);
      if (!c) throw new DockerfileError(line, 'HEALTHCHECK [options] CMD [...] expected (HEALTHCHECK NONE is not used here)');
      return { op, line, options, argv: execForm(line, 'HEALTHCHECK CMD', c[1]!) };
    }
    default:
      throw new DockerfileError(line, `instruction ${op} is not one this reader supports (scripts/dockerfile.ts)`);
  }
}

/** Parse `text` into its stages. Throws {@link DockerfileError} on any unsupported form, or an instruction before the first `FROM`. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const ast of DockerfileParser.parse(text).getInstructions()) {
    const ins = parseInstruction(ast);
    if (ins.op === 'FROM') stages.push({ from: ins, instructions: [] });
    else if (stages.length === 0) throw new DockerfileError(ins.line, `${ins.op} before the first FROM`);
    else stages.at(-1)!.instructions.push(ins);
  }
  if (stages.length === 0) throw new DockerfileError(1, 'no FROM');
  return stages;
}

/** The last instruction of kind `op` in `stage` (Docker's rule for USER, CMD, ENTRYPOINT, HEALTHCHECK), or undefined. */
export function lastOf<Op extends Instruction['op']>(stage: Stage, op: Op): Extract<Instruction, { op: Op }> | undefined {
  return stage.instructions.filter((i): i is Extract<Instruction, { op: Op }> => i.op === op).at(-1);
}

/** `.dockerignore` patterns: one per non-comment line, a leading `/` or `./` dropped. */
export function parseDockerignore(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.replace(/^\.?\//, ''));
}

/**
 * Whether the context path `relPath` (forward slashes, relative to the context root) is excluded
 * by `patterns`, as Docker reads them: each pattern is anchored at the context root and matches the
 * path or one of its parent folders (which excludes everything under it); `*` matches within one
 * path segment. Throws on syntax outside that subset (`!` exceptions, `**`, `?`, `[...]`).
 */
export function dockerignored(relPath: string, patterns: string[]): boolean {
  const segments = relPath.split('/');
  return patterns.some((p) => {
    if (/[!?[\]]|\*\*/.test(p)) throw new Error(`.dockerignore pattern not supported by scripts/dockerfile.ts: ${p}`);
    const re = new RegExp(
      `^${p
        .replace(/\/+$/, '')
        .replace(/[.+^${}()|\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*')}$`,
    );
    return segments.some((_, i) => re.test(segments.slice(0, i + 1).join('/')));
  });
}
