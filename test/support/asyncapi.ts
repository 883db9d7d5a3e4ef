// The AsyncAPI document of the queues (functions/core/contract/asyncapi.json), read as a consumer of it
// would: the message's payload schema found through its `$ref` (relative to the document) and its headers
// schema, compiled for checking messages the pipeline really sent.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';

export const ASYNCAPI_URL = new URL('../../functions/core/contract/asyncapi.json', import.meta.url);

// biome-ignore lint/suspicious/noExplicitAny: a parsed document, walked by the tests that read it
export const asyncapi: any = JSON.parse(readFileSync(ASYNCAPI_URL, 'utf8'));

const message = asyncapi.components.messages.orderVersion;
const payloadRef: string = message.payload.$ref;
/** The payload schema the document points at, resolved against the document's own location. */
export const payloadSchemaUrl = new URL(payloadRef, ASYNCAPI_URL);
const payloadSchema = JSON.parse(readFileSync(payloadSchemaUrl, 'utf8'));

const ajv = new Ajv2020({ allErrors: true, strict: false });
export const validatePayload = ajv.compile(payloadSchema);
export const validateHeaders = ajv.compile(message.headers);

/** SQS message attributes as the document's headers describe them: name → StringValue. */
export function headersOf(
  attributes: Record<string, { StringValue?: string | undefined; DataType?: string | undefined }>,
): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, value.StringValue]));
}
