// Only inside Lambda, unless POWERTOOLS_TRACE_ENABLED is "false": the X-Ray SDK's async hook slows every promise,
// so local mode, the tests and the lab never load it. HTTP is not patched: no trace header goes to the partner.
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

/** `work` in a subsegment of its own async context, so concurrent spans (a batch's records) nest right. */
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
