/**
 * A small, strict reader of the repository's `Dockerfile` and `.dockerignore`, for checks that run
 * without Docker (test/unit/dockerfile.test.ts, scripts/image-build-check.ts). It understands only
 * the instructions the Dockerfile uses, in the forms it uses them, and refuses anything else with
 * the line number, so a new instruction form is a deliberate change here too:
 *
 * - `FROM <image>[:<tag>] [AS <name>]`, `WORKDIR <abs path>`, `USER <name>[:<group>]`,
 *   `EXPOSE <port>...`, `VOLUME ["<path>", ...]`;
 * - `COPY [--from=<stage>] <src>... <dest>` (no globs, no `--chown` / `--chmod`);
 * - `ENV <key>=<value> ...` (values without quotes or spaces);
 * - `RUN <shell command>` (shell form);
 * - `CMD`, `ENTRYPOINT` and `HEALTHCHECK [--interval=… --timeout=… --start-period=… --retries=…] CMD`
 *   in exec (JSON array) form only.
 *
 * Comments and `\` line continuations as Docker reads them. Deliberately does not: expand `ARG` or
 * `${…}` variables, parse heredocs, or implement .dockerignore's full pattern language (only paths
 * and `*` globs; see {@link dockerignored}).
 */

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

/** Logical lines: comments dropped, `\` continuations joined; each with the line it starts on. */
function logicalLines(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let current: { line: number; text: string } | undefined;
  text.split('\n').forEach((raw, i) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith('#')) return;
    if (trimmed === '' && !current) return;
    const continued = trimmed.endsWith('\\');
    const part = continued ? trimmed.slice(0, -1).trim() : trimmed;
    current = current ? { line: current.line, text: `${current.text} ${part}`.trim() } : { line: i + 1, text: part };
    if (!continued) {
      out.push(current);
      current = undefined;
    }
  });
  if (current) throw new DockerfileError(current.line, 'ends inside a line continuation');
  return out;
}

function execForm(line: number, op: string, text: string): string[] {
  let argv: unknown;
  try {
    argv = JSON.parse(text);
  } catch {
    throw new DockerfileError(line, `${op} must be in exec form (a JSON array of strings), got: ${text}`);
  }
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string'))
    throw new DockerfileError(line, `${op} must be a non-empty JSON array of strings`);
  return argv as string[];
}

function parseInstruction(line: number, text: string): Instruction {
  const m = /^([A-Za-z]+)\s+(.*)$/.exec(text);
  if (!m) throw new DockerfileError(line, `not an instruction: ${text}`);
  const op = m[1]!.toUpperCase();
  const rest = m[2]!.trim();
  const words = rest.split(/\s+/);
  switch (op) {
    case 'FROM': {
      const f = /^(\S+?)(?::(\S+))?(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (!f) throw new DockerfileError(line, `FROM <image>[:<tag>] [AS <name>] expected, got: ${rest}`);
      return { op, line, image: f[1]!, tag: f[2], name: f[3] };
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
      let from: string | undefined;
      const args = [...words];
      while (args[0]?.startsWith('--')) {
        const flag = args.shift()!;
        const fm = /^--from=(\S+)$/.exec(flag);
        if (!fm) throw new DockerfileError(line, `COPY flag not supported here: ${flag}`);
        from = fm[1];
      }
      if (args.length < 2) throw new DockerfileError(line, 'COPY needs at least one source and a destination');
      if (args.some((a) => /[*?[]/.test(a))) throw new DockerfileError(line, 'COPY sources must be plain paths (no globs)');
      return { op, line, from, sources: args.slice(0, -1), dest: args.at(-1)! };
    }
    case 'ENV': {
      const vars: Record<string, string> = {};
      for (const w of words) {
        const e = /^([A-Za-z_][A-Za-z0-9_]*)=([^"'\s]*)$/.exec(w);
        if (!e) throw new DockerfileError(line, `ENV takes key=value pairs without quotes, got: ${w}`);
        vars[e[1]!] = e[2]!;
      }
      return { op, line, vars };
    }
    case 'RUN':
      if (rest.startsWith('[')) throw new DockerfileError(line, 'RUN is expected in shell form here');
      return { op, line, command: rest };
    case 'CMD':
    case 'ENTRYPOINT':
      return { op, line, argv: execForm(line, op, rest) };
    case 'HEALTHCHECK': {
      const options: Record<string, string> = {};
      let remaining = rest;
      for (;;) {
        const o = /^--(interval|timeout|start-period|retries)=(\S+)\s+/.exec(remaining);
        if (!o) break;
        options[o[1]!] = o[2]!;
        remaining = remaining.slice(o[0].length);
      }
      const c = /^CMD\s+(.*)$/.exec(remaining);
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
  for (const { line, text: t } of logicalLines(text)) {
    const ins = parseInstruction(line, t);
    if (ins.op === 'FROM') stages.push({ from: ins, instructions: [] });
    else if (stages.length === 0) throw new DockerfileError(line, `${ins.op} before the first FROM`);
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
