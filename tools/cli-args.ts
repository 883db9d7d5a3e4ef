// What the tools' command lines share: node's parseArgs in strict mode (no positionals) with its errors
// turned into UsageError; one way to report a UsageError (the message, a blank line and the usage on
// stderr, exit 2); the flag value checks; CommandError for a failure the operator can act on (its message,
// exit 1); and whether a module is the program being run.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';

export const EXIT_USAGE = 2;

/** A flag the command does not accept, or a value it cannot use: print usage, exit 2. */
export class UsageError extends Error {
  readonly code = 'ERR_USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * A failure the operator can act on (unknown stack or feed, an unreadable file, a refused change, an AWS
 * error with its context): the command prints its message, without a stack trace, and exits 1.
 */
export class CommandError extends Error {
  readonly code = 'ERR_COMMAND';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CommandError';
  }
}

/** `Name: message` of an unexpected error, for a one-line report. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

type FlagOptions = NonNullable<ParseArgsConfig['options']>;

/** Accepted by every command, so each answers `--help` and `-h` (with its usage, exit 0). */
const HELP_FLAG = { help: { type: 'boolean', short: 'h' } } as const;

/**
 * parseArgs (strict, no positionals) over `argv`, with `--help`/`-h` as `values.help` besides `options`;
 * anything it refuses becomes a UsageError.
 */
export function parseFlags<const O extends FlagOptions>(argv: readonly string[], options: O) {
  const all = { ...options, ...HELP_FLAG };
  try {
    return parseArgs({ args: [...argv], options: all, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw usageErrorOf(error, Object.keys(all));
  }
}

/** parseArgs' error as a UsageError; an unknown flag close to a known one gets "did you mean". */
export function usageErrorOf(error: unknown, known: readonly string[]): UsageError {
  const message = error instanceof Error ? error.message : String(error);
  // Node's text may go on with a hint about positionals, which no command here takes: drop it.
  const unknown = /^Unknown option '-{1,2}([^']+)'/.exec(message);
  if (unknown?.[1] === undefined) return new UsageError(message);
  const near = nearestFlag(unknown[1], known);
  return new UsageError(`${unknown[0]}${near === undefined ? '' : `; did you mean --${near}?`}`);
}

/** The known flag a typo most likely meant: at most one edit away (two for longer names), or a prefix. */
export function nearestFlag(typed: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = name.startsWith(typed) && typed.length >= 3 ? 1 : editDistance(typed, name);
    if (distance <= (name.length > 6 ? 2 : 1) && (best === undefined || distance < best.distance))
      best = { name, distance };
  }
  return best?.name;
}

/** Edit distance: single-character insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  let [older, previous] = [[] as number[], Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      let best = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, (older[j - 2] ?? 0) + 1);
      current[j] = best;
    }
    [older, previous] = [previous, current];
  }
  return previous[b.length] ?? 0;
}

/**
 * The AWS SDK's Node.js 20 end-of-support notice (8 lines on stderr when the first client is built) would sit
 * in the middle of a command's output: the SDK's own switch turns it off, unless the user set it themselves.
 */
export function quietSdkNodeVersionWarning(env: NodeJS.ProcessEnv = process.env): void {
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}

/** A string flag's value, trimmed; undefined when absent; a blank value is a UsageError. */
export function flagText(flag: string, value: string | boolean | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (trimmed === '') throw new UsageError(`${flag} needs a value`);
  return trimmed;
}

/** An integer flag of digits only, from `min` to `max` (both safe integers). */
export function flagInteger(flag: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new UsageError(`${flag} must be an integer from ${min} to ${max} (got "${raw}")`);
  }
  return value;
}

/**
 * For a `catch`: a UsageError is printed with the usage and yields EXIT_USAGE; anything else is
 * rethrown unchanged.
 */
export function reportUsageError(
  error: unknown,
  usage: string,
  prefix = '',
  write: (text: string) => void = (text) => process.stderr.write(text),
): number {
  if (!(error instanceof UsageError)) throw error;
  write(`${prefix}${error.message}\n\n${usage}`);
  return EXIT_USAGE;
}

/**
 * The start of a command's main(): `parse` returns the options or 'help'. Help prints the usage on
 * stdout (exit 0); a UsageError prints it on stderr (exit 2); other errors are thrown.
 */
export function parseCommandLine<T>(
  parse: () => T | 'help',
  usage: string,
): { options: T } | { exitCode: number } {
  try {
    const parsed = parse();
    if (parsed === 'help') {
      process.stdout.write(usage);
      return { exitCode: 0 };
    }
    return { options: parsed };
  } catch (error) {
    return { exitCode: reportUsageError(error, usage) };
  }
}

/** Where a command writes, and the environment it reads: the process's, or a test's. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
}

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
};

/** Whether the module at `moduleUrl` (its import.meta.url) is the program node runs, not an import. */
export function isMain(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
