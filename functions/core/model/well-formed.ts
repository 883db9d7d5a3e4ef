// Lone surrogates (`"\ud800"`): JSON carries them, DynamoDB cannot store them, so a consumer would retry such a
// message until dead-lettered. Each becomes U+FFFD, with a finding per field (functions/README.md).
import type { Finding, Order } from './types.js';

// Any surrogate at all (paired ones included): a cheap first test, false for almost every string.
const ANY_SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const LONE_SURROGATE = new RegExp(LONE_SURROGATES.source);

type Holder = Record<string | number, unknown>;

/** Replaces lone surrogates in every string of `order` (in place) and returns a finding per field changed. */
export function replaceLoneSurrogates(order: Order): Finding[] {
  const findings: Finding[] = [];
  // The keys down to the value visited; the poller's hot path: a field's path is written only for a finding.
  const path: (string | number)[] = [];
  const visit = (holder: Holder, key: string | number): void => {
    const value = holder[key];
    if (typeof value === 'string') {
      if (!ANY_SURROGATE.test(value) || !LONE_SURROGATE.test(value)) return;
      const field = [...path, key].map((part) => (typeof part === 'number' ? `[${part}]` : `.${part}`));
      findings.push({
        code: 'invalid-unicode-replaced',
        detail: `${field.join('').slice(1)}: a lone surrogate (not valid Unicode) was replaced with U+FFFD`,
      });
      holder[key] = value.replace(LONE_SURROGATES, '\uFFFD');
    } else if (typeof value === 'object' && value !== null) {
      const node = value as Holder;
      path.push(key);
      if (Array.isArray(node)) for (let i = 0; i < node.length; i++) visit(node, i);
      else for (const name of Object.keys(node)) visit(node, name);
      path.pop();
    }
  };
  for (const key of Object.keys(order)) visit(order, key);
  return findings;
}
