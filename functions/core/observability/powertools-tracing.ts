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
  type Tracing,
} from './tracing.js';

/**
 * X-Ray indexes up to 50 annotations per trace and ignores the rest. Past that, a span's annotations are
 * written as metadata instead (still shown in the trace, not searchable), so the first ones of a trace,
 * which the handlers put on the invocation's span (feed, run id), are the ones that stay searchable.
 */
export const X_RAY_ANNOTATIONS_PER_TRACE = 50;

/** The metadata namespace of annotations beyond the trace's budget, and of details. */
const OVER_BUDGET_NAMESPACE = 'annotationsOverBudget';
const DETAIL_NAMESPACE = 'detail';

type Subsegment = NonNullable<ReturnType<Tracer['getSegment']>>;

export class PowertoolsTracing implements Tracing {
  readonly #tracer: Tracer;
  #budget = { traceId: '', used: 0 };

  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  async span<T>(name: string, annotations: Annotations, work: (span: Span) => Promise<T>): Promise<T> {
    if (!this.#tracer.isTracingEnabled()) return work(NO_SPAN);
    const run = (subsegment?: Subsegment): Promise<T> => {
      // No segment to attach to (outside an invocation): run untraced rather than fail the work.
      if (!subsegment) return work(NO_SPAN);
      return this.#inSubsegment(subsegment, annotations, work);
    };
    return this.#tracer.provider.captureAsyncFunc(name, run) as Promise<T>;
  }

  async #inSubsegment<T>(
    subsegment: Subsegment,
    annotations: Annotations,
    work: (span: Span) => Promise<T>,
  ): Promise<T> {
    const span: Span = {
      annotate: (key, value) => this.#annotate(subsegment, key, value),
      detail: (key, value) => subsegment.addMetadata(key, value, DETAIL_NAMESPACE),
    };
    if (this.#startsTrace()) {
      // The first span of an invocation gets the two annotations Powertools' own handler wrapper adds
      // (ColdStart, Service); they go on the current subsegment, which this one is inside its context.
      this.#tracer.annotateColdStart();
      this.#tracer.addServiceNameAnnotation();
      this.#budget.used += 2;
    }
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

  /** True for the first span of a trace (a new invocation's trace id); resets the annotation budget. */
  #startsTrace(): boolean {
    const traceId = this.#tracer.getRootXrayTraceId() ?? '';
    if (traceId === this.#budget.traceId) return false;
    this.#budget = { traceId, used: 0 };
    return true;
  }

  #annotate(subsegment: Subsegment, key: string, value: AnnotationValue): void {
    if (this.#budget.used < X_RAY_ANNOTATIONS_PER_TRACE) {
      this.#budget.used += 1;
      subsegment.addAnnotation(key, value);
    } else {
      subsegment.addMetadata(key, value, OVER_BUDGET_NAMESPACE);
    }
  }
}

/**
 * Tracing for one function: Powertools Tracer, spans through PowertoolsTracing, and AWS SDK clients
 * captured with captureAWSv3Client (the reasons are in functions/README.md, Tracing and correlation).
 *
 * Outgoing HTTP is not patched (captureHTTPsRequests false): the partner API's calls are the use case's
 * own `### partner fetch` spans, so no X-Ray header is sent to the partner, its query string (cursor,
 * vendor ids) is not recorded, and no http/https patching runs at cold start.
 */
export function powertoolsFunctionTracing(serviceName: string): FunctionTracing {
  const tracer = new Tracer({ serviceName, captureHTTPsRequests: false });
  return {
    tracing: new PowertoolsTracing(tracer),
    captureClient: (client) => tracer.captureAWSv3Client(client),
  };
}
