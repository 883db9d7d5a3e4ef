// The AsyncAPI document of the queues (functions/core/contract/asyncapi.json), read as a consumer of it
// would, from the document alone: its message payload (inline, referring to components.schemas) and its
// headers schema, compiled for checking messages the pipeline really sent.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';

export const ASYNCAPI_URL = new URL('../../functions/core/contract/asyncapi.json', import.meta.url);

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, walked by the tests that read it
export const asyncapi: any = JSON.parse(readFileSync(ASYNCAPI_URL, 'utf8'));

const message = asyncapi.components.messages.orderVersion;
const ajv = new Ajv2020({ allErrors: true, strict: false });
// The whole document as one resource, so the payload's `#/components/schemas/…` resolve within it.
// (Its `id`, a URN naming the application, is no JSON Schema keyword there.)
const { id: _application, ...document } = asyncapi;
ajv.addSchema({ ...document, $id: ASYNCAPI_URL.href }, undefined, undefined, false);
export const validatePayload = ajv.getSchema(
  `${ASYNCAPI_URL.href}#/components/messages/orderVersion/payload`,
) as ReturnType<typeof ajv.compile>;
export const validateHeaders = ajv.compile(message.headers);

/** SQS message attributes as the document's headers describe them: name → StringValue. */
export function headersOf(
  attributes: Record<string, { StringValue?: string | undefined; DataType?: string | undefined }>,
): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, value.StringValue]));
}
