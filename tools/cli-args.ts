// Flag parsing shared by the tools' command lines: node's parseArgs in strict mode (no positionals),
// with its errors turned into UsageError, and one way to report a UsageError: the message, a blank
// line and the usage text on stderr, exit status 2.
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

type FlagOptions = NonNullable<ParseArgsConfig['options']>;

/** parseArgs (strict, no positionals) over `argv`; anything it refuses becomes a UsageError. */
export function parseFlags<const O extends FlagOptions>(argv: readonly string[], options: O) {
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export interface UsageReport {
  usage: string;
  /** Put before the message, e.g. `reconcile: ` or `error: `. */
  prefix?: string;
  /** Default: process.stderr. */
  stderr?: (text: string) => void;
}

/**
 * For a `catch`: a UsageError is printed with the usage and yields EXIT_USAGE; anything else is
 * rethrown unchanged.
 */
export function reportUsageError(error: unknown, report: UsageReport): number {
  if (!(error instanceof UsageError)) throw error;
  const write = report.stderr ?? ((text: string) => process.stderr.write(text));
  write(`${report.prefix ?? ''}${error.message}\n\n${report.usage}`);
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
    return { exitCode: reportUsageError(error, { usage }) };
  }
}
