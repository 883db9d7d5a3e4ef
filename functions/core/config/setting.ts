// One description of a setting: its rule (a zod schema), whether it is required or has a default, the
// environment variable the functions read it from, and what it means. Two surfaces read these
// descriptions and must agree: the CDK configuration checked at synth (infra/config.ts) and the Lambda
// environment checked at cold start (env.ts). The rule is written once, here, so the two cannot drift;
// each surface only spells the value as text (a `-c` flag, an environment variable) and words its errors.
//
// zod/mini, not 'zod': the same validation core with a functional API esbuild can tree-shake (see
// model/parse-order.ts); the declarations below are marked pure so a bundle keeps only the ones it reads.
import * as z from 'zod/mini';

/** Required: no value, no start. Default: applied when unset. Optional: unset means "not used". */
export type Presence = 'required' | 'default' | 'optional';

/**
 * How a value is spelt as text (an environment variable, a `-c orderFeed.key=value` flag). `any`: only the
 * CDK configuration reads it, and the schema takes the raw context value.
 */
export type Shape = 'integer' | 'text' | 'list' | 'integer-list' | 'json-map' | 'any';

export interface Setting<T = unknown, P extends Presence = Presence, D = unknown> {
  /** What the setting means (the README's configuration table says the same). */
  readonly doc: string;
  readonly shape: Shape;
  /** The rule. Its messages read after the setting's name: "must be …", "has …". */
  readonly schema: z.ZodMiniType<T>;
  readonly presence: P;
  /** Applied when unset, and checked by the schema like a given value. */
  readonly default: D;
  /** The environment variable the functions read; undefined for deployment-only settings. */
  readonly env: string | undefined;
  /**
   * The functions insist on the variable even though the deployment configuration has a default: a
   * function must never guess which feed it is.
   */
  readonly envRequired: boolean;
  /** Integer bounds, which each surface states in its own words. */
  readonly range: { readonly min: number; readonly max: number } | undefined;
  /** The accepted values of a choice, which each surface lists in its own words. */
  readonly choices: readonly string[] | undefined;
  /** What one entry of an `integer-list` is called in an error ("order id"). */
  readonly itemName: string | undefined;
  /** Never echo a rejected value: it may be a secret (credentials in a URL, a pasted token). */
  readonly redact: boolean;
  /** Valid values at the edges of the rule, lowest first, for the contract test (test/infra). */
  readonly extremes: readonly T[];
}

/** The value a surface hands over for a setting: optional settings may be undefined. */
export type ValueOf<S> =
  S extends Setting<infer T, infer P> ? (P extends 'optional' ? T | undefined : T) : never;

interface Options {
  readonly doc: string;
  readonly env?: string;
  readonly required?: true;
  readonly default?: unknown;
  readonly envRequired?: true;
  readonly redact?: true;
}

type PresenceOf<O> = O extends { required: true }
  ? 'required'
  : O extends { default: unknown }
    ? 'default'
    : 'optional';
type DefaultOf<O> = O extends { default: infer D } ? D : undefined;
type Declared<T, O> = Setting<T, PresenceOf<O>, DefaultOf<O>>;

interface Rule<T> {
  readonly shape: Shape;
  readonly schema: z.ZodMiniType<T>;
  readonly extremes?: readonly T[];
  readonly range?: { readonly min: number; readonly max: number };
  readonly choices?: readonly string[];
  readonly itemName?: string;
}

/** A setting with a rule of its own (the builders below cover the common ones). */
export function custom<T, const O extends Options>(options: O, rule: Rule<T>): Declared<T, O> {
  const presence = options.required ? 'required' : 'default' in options ? 'default' : 'optional';
  return {
    doc: options.doc,
    shape: rule.shape,
    schema: rule.schema,
    presence: presence as PresenceOf<O>,
    default: options.default as DefaultOf<O>,
    env: options.env,
    envRequired: options.envRequired === true,
    range: rule.range,
    choices: rule.choices,
    itemName: rule.itemName,
    redact: options.redact === true,
    extremes: rule.extremes ?? [],
  };
}

/** An integer from `min` to `max`. */
export function integer<const O extends Options & { min: number; max: number; default?: number }>(
  options: O,
): Declared<number, O> {
  const { min, max } = options;
  return custom(options, {
    shape: 'integer',
    schema: z.int().check(z.minimum(min), z.maximum(max)),
    range: { min, max },
    extremes: [min, max],
  });
}

/** One of a few fixed strings. */
export function choice<const O extends Options & { values: readonly [string, ...string[]] }>(
  options: O,
): Declared<O['values'][number], O> {
  return custom(options, {
    shape: 'text',
    schema: z.enum(options.values),
    choices: options.values,
    extremes: options.values,
  });
}

/** On or off: JSON `true`/`false`, or the text "true"/"false" (a `-c` flag, an environment variable). */
export function flag<const O extends Options & { default: boolean }>(options: O): Declared<boolean, O> {
  return custom(options, {
    shape: 'text',
    schema: z.pipe(
      z.union([z.boolean(), z.enum(['true', 'false'])], { error: 'must be true or false' }),
      z.transform((value: boolean | 'true' | 'false') => value === true || value === 'true'),
    ),
    choices: ['true', 'false'],
    extremes: [false, true],
  });
}

/** A string matching `pattern`; `expected` completes "must be …". */
export function text<
  const O extends Options & {
    pattern: RegExp;
    expected: string;
    extremes?: readonly [string, string];
    default?: string;
  },
>(options: O): Declared<string, O> {
  return custom(options, {
    shape: 'text',
    schema: z
      .string(STRING)
      .check(z.trim(), z.regex(options.pattern, { error: `must be ${options.expected}` })),
    extremes: options.extremes,
  });
}

/**
 * A string checked (and possibly normalised) by `check`, which throws an Error whose message reads after
 * the setting's name. For rules a pattern cannot say.
 */
export function checkedText<
  const O extends Options & { check: (text: string) => string; extremes?: readonly [string, string] },
>(options: O): Declared<string, O> {
  return custom(options, {
    shape: 'text',
    schema: z.pipe(z.string(STRING).check(z.trim()), ruleOf(options.check)),
    extremes: options.extremes,
  });
}

/**
 * A list of strings, each matching `item`; `invalid` words the error for a bad entry. Entries must be
 * distinct (compared by `distinctBy`, if given); a list that is set must have an entry unless `mayBeEmpty`.
 */
export function list<
  const O extends Options & {
    item: RegExp;
    invalid: (entry: string) => string;
    repeated: string;
    distinctBy?: (entry: string) => string;
    empty?: string;
    extremes?: readonly [readonly string[], readonly string[]];
    default?: readonly string[];
  },
>(options: O): Declared<string[], O> {
  const entry = z
    .string(STRING)
    .check(z.trim(), z.regex(options.item, { error: (issue) => options.invalid(String(issue.input)) }));
  const key = options.distinctBy ?? ((value: string) => value);
  const distinct = z.refine<string[]>((entries) => new Set(entries.map(key)).size === entries.length, {
    error: options.repeated,
  });
  const schema =
    options.empty === undefined
      ? z.array(entry).check(distinct)
      : z.array(entry).check(z.minLength(1, { error: options.empty }), distinct);
  return custom(options, {
    shape: 'list',
    schema,
    extremes: options.extremes?.map((values) => [...values]),
  });
}

/** A list of non-negative safe integers (ids); `itemName` names one in errors. */
export function integerList<const O extends Options & { itemName: string }>(
  options: O,
): Declared<number[], O> {
  return custom(options, {
    shape: 'integer-list',
    schema: z.array(z.int().check(z.minimum(0))),
    itemName: options.itemName,
    extremes: [[0], [0, Number.MAX_SAFE_INTEGER]],
  });
}

/** A JSON object of non-empty strings (name → value). */
export function jsonMap<const O extends Options>(options: O): Declared<Record<string, string>, O> {
  return custom(options, {
    shape: 'json-map',
    schema: z.pipe(
      z.record(z.string(), z.unknown()),
      ruleOf((map: Record<string, unknown>) => {
        for (const [key, value] of Object.entries(map)) {
          if (typeof value !== 'string' || value === '')
            throw new Error(`entry "${key}" must be a non-empty string`);
        }
        return map as Record<string, string>;
      }),
    ),
  });
}

/** A zod step running `check`: what it returns is the value, what it throws is the error message. */
export function ruleOf<I, O>(check: (value: I) => O): z.ZodMiniTransform<O, I> {
  return z.transform((value: I, context) => {
    try {
      return check(value);
    } catch (error) {
      context.issues.push({
        code: 'custom',
        message: error instanceof Error ? error.message : String(error),
        input: value,
      });
      return z.NEVER;
    }
  });
}

/** The schema's verdict on a value: the parsed value, or the first problem's message. */
export function checkValue<T>(
  setting: Setting<T>,
  value: unknown,
): { ok: true; value: T } | { ok: false; message: string } {
  const result = z.safeParse(setting.schema, value);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, message: result.error.issues[0]?.message ?? 'is invalid' };
}

const STRING = { error: 'must be a string' };
