// The environment-variable surface of the settings (setting.ts): how the deployment writes a value into a
// Lambda's environment (toEnvironment, used by the CDK constructs) and how the function reads it back at
// cold start (readEnv, used by each function's config module at import time). A missing or malformed
// variable fails the cold start with a message naming it, instead of a request failing halfway through.
import { checkValue, type Setting, type ValueOf } from './setting.js';

export class ConfigError extends Error {
  readonly code = 'ERR_CONFIG';
  readonly variable: string;
  constructor(variable: string, problem: string) {
    super(`configuration error: ${variable} ${problem}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/** Reads one setting from its variable: unset → its default (or an error when required), else checked. */
export function readEnv<S extends Setting>(env: Env, setting: S): ValueOf<S> {
  const name = variableOf(setting);
  const raw = env[name]?.trim();
  if (!raw) {
    if (setting.presence === 'required' || setting.envRequired) {
      throw new ConfigError(name, 'is required but not set');
    }
    if (setting.presence === 'optional') return undefined as ValueOf<S>;
    const fallback = checkValue(setting, setting.default);
    if (!fallback.ok) throw new ConfigError(name, `has an invalid default: ${fallback.message}`);
    return fallback.value as ValueOf<S>;
  }
  const verdict = checkValue(setting, decode(name, setting, raw));
  if (verdict.ok) return verdict.value as ValueOf<S>;
  if (setting.range) {
    throw new ConfigError(name, `must be between ${setting.range.min} and ${setting.range.max}, got ${raw}`);
  }
  if (setting.choices)
    throw new ConfigError(name, `must be one of ${setting.choices.join(', ')}, got "${raw}"`);
  throw new ConfigError(name, `is invalid: ${verdict.message}`);
}

/** A setting's value as the Lambda environment carries it (see `decode` for the way back). */
export type Encodable<T> = T extends readonly (infer E)[] ? readonly E[] : T;

/**
 * The environment variables for `values`, one per setting, spelt the way `readEnv` reads them back; unset
 * optional values are left out. `json` renders maps (the CDK passes `stack.toJsonString`, since the values
 * may be deploy-time tokens).
 */
export function toEnvironment<D extends Readonly<Record<string, Setting>>>(
  settings: D,
  values: { readonly [K in keyof D]: Encodable<ValueOf<D[K]>> | undefined },
  json: (value: unknown) => string = JSON.stringify,
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [key, setting] of Object.entries(settings)) {
    const value: unknown = values[key];
    if (value === undefined) continue;
    environment[variableOf(setting)] = encode(setting, value, json);
  }
  return environment;
}

/** The environment variable a setting is read from (an error for a deployment-only setting). */
export function variableOf(setting: Setting): string {
  if (setting.env === undefined) throw new Error(`setting "${setting.doc}" has no environment variable`);
  return setting.env;
}

function encode(setting: Setting, value: unknown, json: (value: unknown) => string): string {
  switch (setting.shape) {
    case 'list':
    case 'integer-list':
      return (value as readonly unknown[]).join(',');
    case 'json-map':
      return json(value);
    default:
      return String(value);
  }
}

/** The text of a variable as the value its schema checks; a spelling error is reported here. */
function decode(name: string, setting: Setting, raw: string): unknown {
  switch (setting.shape) {
    case 'integer': {
      const value = Number(raw);
      if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(value)) {
        throw new ConfigError(name, `must be an integer, got "${raw}"`);
      }
      return value;
    }
    case 'list':
      return entries(name, raw);
    case 'integer-list':
      return entries(name, raw).map((entry) => {
        const value = Number(entry);
        if (!/^\d+$/.test(entry) || !Number.isSafeInteger(value)) {
          throw new ConfigError(name, `has a value that is not an integer ${setting.itemName}: "${entry}"`);
        }
        return value;
      });
    case 'json-map': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw new ConfigError(name, 'must be a JSON object of strings');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new ConfigError(name, 'must be a JSON object of strings');
      }
      return parsed;
    }
    default:
      return raw;
  }
}

/** A comma-separated list; empty entries are an error (they usually mean a typo). */
function entries(name: string, raw: string): string[] {
  const values = raw.split(',').map((entry) => entry.trim());
  if (values.some((entry) => entry === '')) throw new ConfigError(name, `has an empty entry: "${raw}"`);
  return values;
}
