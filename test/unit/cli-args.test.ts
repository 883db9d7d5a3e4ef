// The flag kit every CLI shares (tools/cli-args.ts): help, usage errors and their exit codes.
import { describe, expect, it, vi } from 'vitest';
import { EXIT_USAGE, nearestFlag, parseCommandLine, parseFlags, UsageError } from '../../tools/cli-args.js';

const OPTIONS = { port: { type: 'string' } } as const;
const USAGE = 'Usage: npm run tool -- [--port N]\n';

describe('parseFlags', () => {
  it('accepts --help and -h for every command, whatever its own flags', () => {
    expect(parseFlags(['--help'], OPTIONS).help).toBe(true);
    expect(parseFlags(['-h'], {}).help).toBe(true);
    expect(parseFlags(['--port', '1'], OPTIONS)).toEqual({ port: '1' });
  });

  it('turns an unknown flag or a stray argument into a UsageError', () => {
    expect(() => parseFlags(['--bogus', '1'], OPTIONS)).toThrow(new UsageError("Unknown option '--bogus'"));
    expect(() => parseFlags(['extra'], OPTIONS)).toThrow(UsageError);
  });

  it('says which flag a typo most likely meant', () => {
    expect(() => parseFlags(['--prot', '1'], OPTIONS)).toThrow(
      new UsageError("Unknown option '--prot'; did you mean --port?"),
    );
  });
});

describe('nearestFlag', () => {
  const flags = ['scenario', 'summary-json', 'aws-endpoint', 'seed', 'help'];

  it.each([
    ['senario', 'scenario'], // a letter missing
    ['scenraio', 'scenario'], // two letters swapped
    ['summary', 'summary-json'], // a prefix
    ['aws-endpiont', 'aws-endpoint'],
    ['sed', 'seed'],
  ])('reads --%s as --%s', (typed, meant) => {
    expect(nearestFlag(typed, flags)).toBe(meant);
  });

  it('suggests nothing for a flag that is not close to any', () => {
    expect(nearestFlag('bogus', flags)).toBeUndefined();
    expect(nearestFlag('x', flags)).toBeUndefined();
  });
});

describe('parseCommandLine', () => {
  const parse = (argv: string[]) => () => {
    const values = parseFlags(argv, OPTIONS);
    return values.help ? ('help' as const) : values;
  };

  it('prints the usage on stdout and exits 0 for --help', () => {
    const stdout = vi.spyOn(process.stdout, 'write').mockReturnValue(true);

    expect(parseCommandLine(parse(['--help']), USAGE)).toEqual({ exitCode: 0 });
    expect(stdout).toHaveBeenCalledWith(USAGE);
  });

  it('prints the error and the usage on stderr and exits 2 for a bad flag', () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockReturnValue(true);

    expect(parseCommandLine(parse(['--bogus']), USAGE)).toEqual({ exitCode: EXIT_USAGE });
    expect(stderr).toHaveBeenCalledWith(`Unknown option '--bogus'\n\n${USAGE}`);
  });

  it('returns the options otherwise', () => {
    expect(parseCommandLine(parse(['--port', '8']), USAGE)).toEqual({ options: { port: '8' } });
  });
});
