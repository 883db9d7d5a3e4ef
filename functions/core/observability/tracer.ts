// Powertools Tracer (X-Ray), one per container at module scope as in Powertools' examples/app. It is created
// only inside Lambda and unless POWERTOOLS_TRACE_ENABLED is "false": importing the X-Ray SDK switches on an async
// hook that slows every promise of the process, so local mode, the tests and the lab never load it
// (test/infra/lambda-bundle.test.ts). Outgoing HTTP is not patched: no trace header or query string goes to
// the partner, whose calls are the `### partner fetch` spans.
import type { Tracer } from '@aws-lambda-powertools/tracer';

const { AWS_EXECUTION_ENV, POWERTOOLS_TRACE_ENABLED } = process.env;

export const tracer: Tracer | undefined =
  AWS_EXECUTION_ENV && POWERTOOLS_TRACE_ENABLED?.toLowerCase() !== 'false'
    ? new (await import('@aws-lambda-powertools/tracer')).Tracer({ captureHTTPsRequests: false })
    : undefined;

/** The current span's subsegment; undefined where tracing is off. */
export type Subsegment = Parameters<Parameters<Tracer['provider']['captureAsyncFunc']>[1]>[0];

/** Records each call of an AWS SDK client as a subsegment and sends the trace header on. */
export const traced = <Client>(client: Client): Client => tracer?.captureAWSv3Client(client) ?? client;

/**
 * Runs `work` in a subsegment `name` under the current one, in its own async context (so concurrent spans,
 * records of a batch or a page published while the next is fetched, nest right), with `annotations`
 * (indexed; X-Ray indexes the first 50 of a trace). A failure marks the subsegment and is rethrown.
 */
export function span<T>(
  name: string,
  annotations: Record<string, string | number | boolean>,
  work: (subsegment: Subsegment) => Promise<T>,
): Promise<T> {
  if (!tracer) return work(undefined);
  return tracer.provider.captureAsyncFunc(name, async (subsegment) => {
    for (const [key, value] of Object.entries(annotations)) subsegment?.addAnnotation(key, value);
    try {
      return await work(subsegment);
    } catch (error) {
      subsegment?.addError(error instanceof Error ? error : String(error));
      throw error;
    } finally {
      subsegment?.close();
    }
  }) as Promise<T>;
}
