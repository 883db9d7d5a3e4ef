// The tracing port over Powertools Tracer (X-Ray). Imported only through loadTracing (tracing.ts), so
// nothing else pays for the X-Ray SDK. Each span is an X-Ray subsegment under the one it is started from
// (the Lambda invocation's segment at the top), in its own async context, so concurrent spans (records of
// one batch, a page published while the next is fetched) nest correctly.
import { Tracer } from '@aws-lambda-powertools/tracer';
import {
  type Annotations,
  type AnnotationValue,
  type FunctionTracing,
  NO_SPAN,
  type Span,
} from './tracing.js';

/**
 * X-Ray indexes up to 50 annotations per trace and ignores the rest. Past that, a span's annotations are
 * written as metadata instead (still shown in the trace, not searchable), so the first ones of a trace,
 * which the handlers put on the invocation's span (feed, run id), are the ones that stay searchable.
 */
export const X_RAY_ANNOTATIONS_PER_TRACE = 50;

type Subsegment = NonNullable<ReturnType<Tracer['getSegment']>>;

/**
 * Tracing for one function: Powertools Tracer, spans as subsegments, and AWS SDK clients captured with
 * captureAWSv3Client (the reasons are in functions/README.md, Tracing and correlation).
 *
 * Outgoing HTTP is not patched (captureHTTPsRequests false): the partner API's calls are the use case's
 * own `### partner fetch` spans, so no X-Ray header is sent to the partner, its query string (cursor,
 * vendor ids) is not recorded, and no http/https patching runs at cold start.
 */
export function powertoolsFunctionTracing(serviceName: string): FunctionTracing {
  const tracer = new Tracer({ serviceName, captureHTTPsRequests: false });
  // The annotations used so far in the current trace (a new invocation's trace id starts again at 0).
  let budget = { traceId: '', used: 0 };

  function annotate(subsegment: Subsegment, key: string, value: AnnotationValue): void {
    if (budget.used < X_RAY_ANNOTATIONS_PER_TRACE) {
      budget.used += 1;
      subsegment.addAnnotation(key, value);
    } else {
      subsegment.addMetadata(key, value, 'annotationsOverBudget');
    }
  }

  async function inSubsegment<T>(
    subsegment: Subsegment,
    annotations: Annotations,
    work: (span: Span) => Promise<T>,
  ) {
    const traceId = tracer.getRootXrayTraceId() ?? '';
    if (traceId !== budget.traceId) {
      budget = { traceId, used: 2 };
      // The first span of an invocation gets the two annotations Powertools' own handler wrapper adds
      // (ColdStart, Service); they go on the current subsegment, which this one is inside its context.
      tracer.annotateColdStart();
      tracer.addServiceNameAnnotation();
    }
    const span: Span = {
      annotate: (key, value) => annotate(subsegment, key, value),
      detail: (key, value) => subsegment.addMetadata(key, value, 'detail'),
    };
    for (const [key, value] of Object.entries(annotations)) span.annotate(key, value);
    try {
      return await work(span);
    } catch (error) {
      subsegment.addError(error instanceof Error ? error : String(error));
      throw error;
    } finally {
      subsegment.close();
    }
  }

  return {
    tracing: {
      async span<T>(name: string, annotations: Annotations, work: (span: Span) => Promise<T>) {
        if (!tracer.isTracingEnabled()) return work(NO_SPAN);
        // No segment to attach to (outside an invocation): run untraced rather than fail the work.
        return tracer.provider.captureAsyncFunc(name, (subsegment?: Subsegment) =>
          subsegment ? inSubsegment(subsegment, annotations, work) : work(NO_SPAN),
        ) as Promise<T>;
      },
    },
    captureClient: (client) => tracer.captureAWSv3Client(client),
  };
}
