// The AsyncAPI document (functions/core/contract/asyncapi.json) carries its message payload inline, so a
// tool that gets the document alone can read it. The payload is generated from the one JSON Schema of the
// body (order-version-message.schema.json, the source of truth): the schema's `$defs` become
// `components.schemas` and its `#/$defs/X` references `#/components/schemas/X`; `$schema` and `$id` stay
// with the schema file (inside the document, `$id` would move the references' base away from it).
// test/unit/contract/asyncapi.test.ts checks the document equals what this generates.
//   npx tsx tools/contract/bundle-asyncapi.ts     (rewrites asyncapi.json; then npx biome format --write it)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isMain } from '../cli-args.js';

const CONTRACT = new URL('../../functions/core/contract/', import.meta.url);
export const ASYNCAPI_PATH = fileURLToPath(new URL('asyncapi.json', CONTRACT));
export const SCHEMA_PATH = fileURLToPath(new URL('order-version-message.schema.json', CONTRACT));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** `document` with its payload and component schemas generated from `schema`; everything else kept. */
export function bundleAsyncApi(document: JsonObject, schema: JsonObject): JsonObject {
  const { $schema: _dialect, $id: _id, $defs = {}, ...payload } = schema;
  const components = document.components as JsonObject;
  const messages = components.messages as JsonObject;
  return {
    ...document,
    components: {
      ...components,
      messages: {
        ...messages,
        orderVersion: { ...(messages.orderVersion as JsonObject), payload: moveRefs(payload) },
      },
      schemas: moveRefs($defs),
    },
  };
}

function moveRefs(value: Json): Json {
  if (Array.isArray(value)) return value.map(moveRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#/$defs/')
        ? `#/components/schemas/${inner.slice('#/$defs/'.length)}`
        : moveRefs(inner),
    ]),
  );
}

const readJson = (path: string): JsonObject => JSON.parse(readFileSync(path, 'utf8'));

/** The document as the files on disk generate it. */
export function bundledAsyncApi(): JsonObject {
  return bundleAsyncApi(readJson(ASYNCAPI_PATH), readJson(SCHEMA_PATH));
}

if (isMain(import.meta.url)) {
  writeFileSync(ASYNCAPI_PATH, `${JSON.stringify(bundledAsyncApi(), null, 2)}\n`);
  process.stdout.write(`${ASYNCAPI_PATH} written from ${SCHEMA_PATH}\n`);
}
