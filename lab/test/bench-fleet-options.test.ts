// The bench's flag for the fleet's catch-up (lab/bench/options.ts): its default, its range, its refusal.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../tools/cli-args.js';
import { parseBenchArgs } from '../bench/options.js';

const fleetOf = (argv: string[]) => {
  const options = parseBenchArgs(argv);
  if (options === 'help') throw new Error('help');
  return options.fleet;
};

describe('--fleet-catch-up-feeds', () => {
  it('sets how many of the 1,000 feeds catch up at once (default 200)', () => {
    expect(fleetOf([])).toMatchObject({ feeds: 1_000, catchUpFeeds: 200 });
    expect(fleetOf(['--fleet-catch-up-feeds', '1000'])).toMatchObject({ feeds: 1_000, catchUpFeeds: 1_000 });
  });

  it('refuses 0, more than the fleet, and a non-number, naming the flag', () => {
    for (const value of ['0', '1001', 'all'])
      expect(() => parseBenchArgs(['--fleet-catch-up-feeds', value])).toThrow(
        expect.objectContaining({
          name: UsageError.name,
          message: expect.stringContaining('--fleet-catch-up-feeds'),
        }),
      );
  });
});

describe('--fleet-backlog-pages', () => {
  it("sets each catch-up feed's backlog in pages (default 16: one page a sixteenth of it)", () => {
    expect(fleetOf([])).toMatchObject({ backlogPages: 16, pageSize: 5 });
    expect(fleetOf(['--fleet-backlog-pages', '100'])).toMatchObject({ backlogPages: 100 });
  });

  it('refuses 0, more than 100, and a non-number, naming the flag', () => {
    for (const value of ['0', '101', 'many'])
      expect(() => parseBenchArgs(['--fleet-backlog-pages', value])).toThrow(
        expect.objectContaining({
          name: UsageError.name,
          message: expect.stringContaining('--fleet-backlog-pages'),
        }),
      );
  });
});
