// The published JSON Schema of the message contract, compiled once, for tests that check what the pipeline
// really sent (never publish a message that violates the contract).
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';

const schema = JSON.parse(
  readFileSync(
    new URL('../../functions/core/contract/order-version-message.schema.json', import.meta.url),
    'utf8',
  ),
);
const validate = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

/** The schema violations of each body that has any, by index (an empty list: every body is valid). */
export function contractViolations(bodies: readonly string[]): Array<{ index: number; errors: unknown }> {
  const violations: Array<{ index: number; errors: unknown }> = [];
  bodies.forEach((body, index) => {
    if (!validate(JSON.parse(body))) violations.push({ index, errors: validate.errors });
  });
  return violations;
}
