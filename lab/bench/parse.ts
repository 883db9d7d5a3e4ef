// Section 13: the partner client's body parse (parseJsonExact) per MiB, on ordinary generated pages and on
// bodies a partner or a proxy could send instead: not JSON at all, or JSON built to be slow. Target (issue 31):
// every adversarial body within 3x the ordinary page per MiB. A body dense in values is above it in JSON.parse
// alone, so each body above it is also given against JSON.parse alone and against pages with 64-bit ids. Each
// body is also parsed at a quarter of its size (growth: ms/MiB at full size over ms/MiB at a quarter, about 1
// when linear and 4 when quadratic; the scan parseJsonExact once had took 7.2 s for 64 KiB of `"\`) and by
// JSON.parse alone (what the runtime itself takes for that body). Where JSON.parse hands a reviver each
// number's source text (Node 22), the pages with 64-bit ids are also parsed that way, the alternative
// parseJsonExact does not take.
// Timed in process CPU time (`cpuClock`): this machine is shared, and wall time under load blurs by 2-3x.
// Run in a child process with the V8 heap flags Lambda's runtime gives the poller (lambdaHeapFlags): the
// garbage collector's share of a body dense in values depends on the young generation's size.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DEFAULTS } from '../../functions/core/config/settings.js';
import { parseJsonExact, stringifyJsonExact } from '../../functions/core/model/int64.js';
import { pollerMemoryMb } from '../../infra/constructs/poller.js';
import { generateHistories } from '../../tools/simulator/generated-feed.js';
import { toWire } from '../../tools/simulator/model.js';
import { compareCpu, cpuClock, sink } from './measure.js';
import { figure, type Section } from './report.js';

/** The parse target: every adversarial body at most this many times the ordinary page, per MiB. */
export const PARSE_TARGET = 3;

const MiB = 1024 * 1024;
const INT64 = '9007199254740993'; // 2^53 + 1: JSON.parse alone would round it

/**
 * Generated orders as the simulator serves them, in pages of 100, to about `bytes`; 64-bit ids if asked. The
 * last is one page of every generated order, longer than `bytes`, to cut off.
 */
function ordinaryPages(
  bytes: number,
  seed: number,
  ids64: boolean,
): { pages: string[]; whole: string; records: object[] } {
  const histories = generateHistories({
    seed,
    orders: Math.ceil(bytes / 1_500),
    vendors: 25,
    currencies: ['EUR'],
    idBase: 5_000_000_000,
    spanMs: 3 * 24 * 3_600_000,
    timestamps: 'mixed',
  });
  const records = histories.flat().map(({ order, style }) => {
    const wire = toWire(order, true, style);
    // Ids and versions far beyond 2^53, as a partner on 64-bit (snowflake) ids sends them.
    if (ids64)
      Object.assign(wire, { id: 2n ** 62n + BigInt(order.id), version: 2n ** 60n + BigInt(order.version) });
    return wire;
  });
  const pages: string[] = [];
  for (let at = 0, total = 0; at < records.length && total < bytes; at += 100) {
    pages.push(
      stringifyJsonExact({ hasMore: true, data: records.slice(at, at + 100), nextPageId: `c${at}` }),
    );
    total += pages.at(-1)?.length ?? 0;
  }
  return { pages, whole: stringifyJsonExact({ hasMore: true, data: records }), records };
}

/** `unit` repeated to about `bytes` characters. */
const fill = (unit: string, bytes: number) => unit.repeat(Math.max(1, Math.floor(bytes / unit.length)));

/** Adversarial bodies of about `bytes` characters, by name. */
function adversarialBodies(bytes: number, longPage: string): Array<[string, string]> {
  const half = Math.floor(bytes / 2);
  return [
    ['a page cut off mid-record (not JSON)', longPage.slice(0, bytes)],
    ['an unterminated string of \\" (not JSON)', `{"id":${INT64},"s":"${fill('\\"', bytes)}`],
    ['an unterminated string of \\\\ (not JSON)', `[${INT64},"${fill('\\\\', bytes)}`],
    ['a string of \\\\ beside an int64', `{"id":${INT64},"s":"${fill('\\\\', bytes)}"}`],
    ['short strings of escapes, each beside an int64', `[${fill(`"\\"\\\\",${INT64},`, bytes)}0]`],
    ['int64 literals only', `[${fill(`${INT64},`, bytes)}0]`],
    ['a string of digits', `["${fill('1234567890', bytes)}"]`],
    ['one number of a million digits', `[${fill('9', bytes)}]`],
    ['digit runs with no JSON around them (not JSON)', fill(`${INT64} `, bytes)],
    // As dense in arrays as deep nesting, and no deeper than a Page: V8's cost is per value, not per level.
    ['nesting 8 deep, repeated', `[${fill('[[[[[[[[]]]]]]]],', bytes)}0]`],
    ['deep nesting', `${'['.repeat(half)}${']'.repeat(half)}`],
    ['deep nesting around an int64', `${'['.repeat(half)}${INT64}${']'.repeat(half)}`],
  ];
}

type Parse = (text: string) => unknown;

/** One page of generated orders of about `bytes` (ids within 2^53), their objects left to the collector. */
function onePage(bytes: number, seed: number): string {
  const { records, whole } = ordinaryPages(bytes, seed, false);
  return stringifyJsonExact({
    hasMore: true,
    data: records.slice(0, Math.floor((records.length * bytes) / whole.length)),
  });
}

/**
 * At the body cap: one ordinary page of that size (a partner ignoring pageSize) and the densest bodies, CPU per
 * MiB of the fastest of 3 single parses, by parseJsonExact and by JSON.parse alone. A 1 MiB body of values fits
 * in Lambda's young generation; at the cap its parsed form does not, and the garbage collector's share grows.
 */
function atCap(capBytes: number, seed: number) {
  const bodies: Array<[string, string]> = [
    ['an ordinary page', onePage(capBytes, seed)],
    ['int64 literals only', `[${fill(`${INT64},`, capBytes)}0]`],
    ['nesting 8 deep, repeated', `[${fill('[[[[[[[[]]]]]]]],', capBytes)}0]`],
    ['empty objects', `[${fill('{},', capBytes)}{}]`],
  ];
  const fastest = (body: string, parse: Parse) => {
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 3; round++) {
      // Not kept while the next one parses: a parsed 8 MiB body is up to ~215 MB, Lambda's old space 461.
      sink(undefined);
      const started = cpuClock();
      parseAll([body], parse, 1);
      best = Math.min(best, cpuClock() - started);
    }
    return best / (body.length / MiB);
  };
  return bodies.map(([name, body]) => ({
    name,
    mib: body.length / MiB,
    msPerMiB: fastest(body, parseJsonExact),
    jsonParseMsPerMiB: fastest(body, JSON.parse),
  }));
}

/** As the client calls it: a body that is not JSON throws, and that is its answer. */
function parseAll(bodies: readonly string[], parse: Parse, times: number): void {
  for (let i = 0; i < times; i++) {
    for (const body of bodies) {
      try {
        sink(parse(body));
      } catch (error) {
        sink(error);
      }
    }
  }
}

const mibOf = (bodies: readonly string[]) => bodies.reduce((sum, body) => sum + body.length, 0) / MiB;

/** JSON.parse with the runtime's number source text (Node 22), or undefined where it has none. */
function sourceTextParse(): Parse | undefined {
  type Reviver = (key: string, value: unknown, context?: { source?: string }) => unknown;
  const parse = JSON.parse as (text: string, reviver: Reviver) => unknown;
  if (parse('1', (_key, _value, context) => context?.source) !== '1') return undefined;
  const exact: Reviver = (_key, value, context) =>
    typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d{1,1000}$/.test(context?.source ?? '')
      ? BigInt(context?.source ?? '')
      : value;
  return (text) => parse(text, exact);
}

interface ParseOptions {
  rounds: number;
  bytes: number;
  seed: number;
  /** The body cap, to parse the densest bodies at it too (atCap); unset, they are not. */
  capBytes?: number;
}

/**
 * The V8 heap flags Lambda's Node.js runtime starts a function with (its bootstrap script, when NODE_OPTIONS
 * names no heap size): a tenth of `memoryMb` to the young generation, two semi-spaces (V8 rounds each up to a
 * power of two: 32 MiB at the poller's 512 MB), the rest to the old generation. A plain `node` here has 16 MiB
 * semi-spaces, where JSON.parse of a body dense in arrays spends 3-4x as long in the garbage collector.
 */
export function lambdaHeapFlags(memoryMb: number): string[] {
  const newSpaceMb = Math.floor(memoryMb / 10);
  return [
    `--max-semi-space-size=${Math.floor(newSpaceMb / 2)}`,
    `--max-old-space-size=${memoryMb - newSpaceMb}`,
  ];
}

/** The heap flags of the poller at the default body cap, as Lambda runs it. */
export const POLLER_HEAP_FLAGS = lambdaHeapFlags(pollerMemoryMb(DEFAULTS.maxPageBodyBytes));

/** The section in a child process of this runtime under `heapFlags`, its result read back as JSON. */
export function parseSectionUnder(options: ParseOptions, heapFlags = POLLER_HEAP_FLAGS): Promise<Section> {
  const args = [...process.execArgv, ...heapFlags, fileURLToPath(import.meta.url), JSON.stringify(options)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as Section) : reject(new Error(`parse section: exit ${code}`)),
    );
  });
}

/** The section in this process, under the heap flags it was started with. */
export async function parseSection(options: ParseOptions): Promise<Section> {
  const { rounds, bytes, seed } = options;
  const heapFlags = process.execArgv.filter((flag) => /^--max-(semi|old)-space-size=/.test(flag));
  const plain = ordinaryPages(bytes, seed, false).pages;
  const { pages: ids64, whole } = ordinaryPages(bytes, seed, true);
  let floorMsPerMiB = Number.POSITIVE_INFINITY;
  /** ms per MiB of `bodies`, fastest of `rounds` alternated with the ordinary pages (the floor, kept fastest). */
  const perMiB = async (bodies: readonly string[], parse: Parse = parseJsonExact) => {
    // Enough repetitions for a round of about 2 ms: a body that is not JSON fails in microseconds.
    const once = performance.now();
    parseAll(bodies, parse, 1);
    const times = Math.min(10_000, Math.max(1, Math.ceil(2 / Math.max(performance.now() - once, 0.001))));
    const result = await compareCpu(
      () => parseAll(bodies, parse, times),
      () => parseAll(plain, parseJsonExact, 1),
      { rounds, warmup: 1, warmupMs: 0, clock: cpuClock },
    );
    floorMsPerMiB = Math.min(floorMsPerMiB, result.floorMs / mibOf(plain));
    return result.measuredMs / times / mibOf(bodies);
  };
  const ids64MsPerMiB = await perMiB(ids64);
  const reviver = sourceTextParse();
  const reviverMsPerMiB = reviver && (await perMiB(ids64, reviver));
  const quarter = new Map(adversarialBodies(Math.floor(bytes / 4), whole));
  const bodies: Array<{
    name: string;
    chars: number;
    msPerMiB: number;
    quarterMsPerMiB: number;
    jsonParseMsPerMiB: number;
  }> = [];
  for (const [name, body] of adversarialBodies(bytes, whole)) {
    bodies.push({
      name,
      chars: body.length,
      msPerMiB: await perMiB([body]),
      quarterMsPerMiB: await perMiB([quarter.get(name) ?? '']),
      // What the runtime's own JSON.parse takes for the same body: the part no JSON.parse-based parser avoids.
      jsonParseMsPerMiB: await perMiB([body], JSON.parse),
    });
  }
  const cap = options.capBytes === undefined ? [] : atCap(options.capBytes, seed);
  const capMiB = (options.capBytes ?? 0) / MiB;
  const worst = bodies.reduce((a, b) => (b.msPerMiB > a.msPerMiB ? b : a));
  const above = bodies.filter((body) => body.msPerMiB > PARSE_TARGET * floorMsPerMiB);
  const ratios = (over: (body: (typeof bodies)[number]) => number) =>
    above.map((body) => `${body.name} ${(body.msPerMiB / over(body)).toFixed(2)}x`).join(', ');
  return {
    id: 'parse',
    title: `Parsing partner bodies per MiB (parseJsonExact, Node ${process.versions.node}, ${heapFlags.join(' ') || "V8's default heap"})`,
    floorIs: `parseJsonExact of ordinary generated pages, ids within 2^53 (plain JSON.parse); target: every adversarial body within ${PARSE_TARGET}x`,
    figures: [
      figure('ordinary pages, ids within 2^53', 'ms/MiB', floorMsPerMiB),
      figure('ordinary pages, ids and versions beyond 2^53', 'ms/MiB', ids64MsPerMiB, floorMsPerMiB),
      ...(reviverMsPerMiB === undefined
        ? []
        : [
            figure(
              '  the same through the source-text reviver (not used)',
              'ms/MiB',
              reviverMsPerMiB,
              floorMsPerMiB,
            ),
          ]),
      ...bodies.map((body) => figure(body.name, 'ms/MiB', body.msPerMiB, floorMsPerMiB, PARSE_TARGET)),
      // No target: the issue's is per MiB at 1 MiB; the floor here is the ordinary page at the cap.
      ...cap.map((body) =>
        figure(`at the ${capMiB} MiB cap: ${body.name}`, 'ms/MiB', body.msPerMiB, cap[0]?.msPerMiB),
      ),
    ],
    formulas: [
      `parse: ms/MiB = CPU time of the fastest of ${rounds} rounds / MiB parsed, alternated with the ordinary pages; ratio = body ÷ ordinary pages; the worst: ${worst.name} (growth from a quarter of its size ${(worst.msPerMiB / worst.quarterMsPerMiB).toFixed(2)}x)`,
      ...(above.length === 0
        ? []
        : [
            `parse, above ${PARSE_TARGET}x: ÷ JSON.parse alone of the same body: ${ratios((body) => body.jsonParseMsPerMiB)}`,
            `parse, above ${PARSE_TARGET}x: ÷ ordinary pages with 64-bit ids: ${ratios(() => ids64MsPerMiB)}`,
          ]),
      ...(cap.length === 0
        ? []
        : [
            `parse, at the ${capMiB} MiB cap: ms/MiB of the fastest of 3 single parses, ratio ÷ the ordinary page at the cap; JSON.parse alone: ${cap.map((body) => `${body.name} ${body.jsonParseMsPerMiB.toFixed(1)}`).join(', ')} ms/MiB`,
          ]),
    ],
    details: {
      node: process.version,
      heapFlags,
      bytesPerBody: bytes,
      ordinaryPages: { pages: plain.length, mib: mibOf(plain), ids64Mib: mibOf(ids64) },
      // growth = ms/MiB at full size ÷ ms/MiB at a quarter: about 1 when linear, about 4 when quadratic;
      // overJsonParse = parseJsonExact ÷ JSON.parse alone on the same body: what parseJsonExact adds.
      bodies: bodies.map((body) => ({
        ...body,
        growth: body.msPerMiB / body.quarterMsPerMiB,
        overJsonParse: body.msPerMiB / body.jsonParseMsPerMiB,
        overIds64Pages: body.msPerMiB / ids64MsPerMiB,
      })),
      atCap: cap,
    },
  };
}

// As a script (parseSectionUnder): the section as JSON on stdout.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(
    JSON.stringify(await parseSection(JSON.parse(process.argv[2] ?? '{}') as ParseOptions)),
  );
}
