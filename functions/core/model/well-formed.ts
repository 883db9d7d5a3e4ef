// Strings that are not valid Unicode. JSON can carry a lone surrogate (`"\ud800"`), but AWS cannot store or
// send it: DynamoDB rejects it (or, encoded to UTF-8 on the way, silently gets U+FFFD), and a consumer
// would retry such a message until it is dead-lettered. Policy: the order is kept, each lone surrogate is
// replaced with U+FFFD (the replacement character) and a finding names every field that was altered, so
// the change is visible on the message and on the stored order.
import type { Finding, Order } from './types.js';

// Any surrogate at all (paired ones included): a cheap first test, false for almost every string.
const ANY_SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const LONE_SURROGATE = new RegExp(LONE_SURROGATES.source);

const INVALID_UNICODE_FINDING = 'invalid-unicode-replaced';

/** True when some string in `value` holds a surrogate code unit (without building any path). */
function anySurrogate(value: unknown): boolean {
  if (typeof value === 'string') return ANY_SURROGATE.test(value);
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) {
    for (const element of value) if (anySurrogate(element)) return true;
    return false;
  }
  for (const key in value) {
    if (ANY_SURROGATE.test(key) || anySurrogate((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** Replaces lone surrogates in every string of `order` (in place) and returns a finding per field changed. */
export function replaceLoneSurrogates(order: Order): Finding[] {
  // The poller's hot path: almost no order has a surrogate at all, so the walk that names fields runs rarely.
  if (!anySurrogate(order)) return [];
  const findings: Finding[] = [];
  const visit = (value: unknown, path: string): unknown => {
    if (typeof value === 'string') {
      if (!LONE_SURROGATE.test(value)) return value;
      findings.push({
        code: INVALID_UNICODE_FINDING,
        detail: `${path}: a lone surrogate (not valid Unicode) was replaced with U+FFFD`,
      });
      return value.replace(LONE_SURROGATES, '\uFFFD');
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = visit(value[i], `${path}[${i}]`);
      return value;
    }
    if (typeof value === 'object' && value !== null) {
      const object = value as Record<string, unknown>;
      for (const key of Object.keys(object)) {
        object[key] = visit(object[key], path === '' ? key : `${path}.${key}`);
      }
    }
    return value;
  };
  visit(order, '');
  return findings;
}
