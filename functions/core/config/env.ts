// Reading Lambda configuration from environment variables. Each function's config module calls these
// at import time, so a missing or malformed variable fails the cold start with a message naming it,
// instead of a request failing halfway through.

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

export function requiredString(env: Env, name: string): string {
  const value = env[name]?.trim();
  if (!value) throw new ConfigError(name, 'is required but not set');
  return value;
}

export function optionalString(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

export function integer(
  env: Env,
  name: string,
  bounds: { min: number; max: number; default?: number },
): number {
  const raw = env[name]?.trim();
  if (!raw) {
    if (bounds.default !== undefined) return bounds.default;
    throw new ConfigError(name, 'is required but not set');
  }
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(value)) {
    throw new ConfigError(name, `must be an integer, got "${raw}"`);
  }
  if (value < bounds.min || value > bounds.max) {
    throw new ConfigError(name, `must be between ${bounds.min} and ${bounds.max}, got ${value}`);
  }
  return value;
}

export function optionalInteger(
  env: Env,
  name: string,
  bounds: { min: number; max: number },
): number | undefined {
  return env[name]?.trim() ? integer(env, name, bounds) : undefined;
}

export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

/** A comma-separated list; empty entries are an error (they usually mean a typo). */
export function optionalList(env: Env, name: string): string[] | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.some((entry) => entry === '')) throw new ConfigError(name, `has an empty entry: "${raw}"`);
  return entries;
}

export function jsonStringMap(env: Env, name: string): Record<string, string> {
  const raw = env[name]?.trim();
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(name, 'must be a JSON object of strings');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(name, 'must be a JSON object of strings');
  }
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== 'string' || value === '')
      throw new ConfigError(name, `entry "${key}" must be a non-empty string`);
  }
  return parsed as Record<string, string>;
}
