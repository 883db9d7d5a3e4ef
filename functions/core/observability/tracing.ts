// The tracing port: what the use cases and handlers need of a tracer, and nothing of any tracing library.
// It stays a port (Logger and Metrics are Powertools' own) because the tests fake it (RecordingTracing in
// test/support/fakes.ts asserts spans, nesting and annotations) and because the X-Ray SDK must not be
// imported where tracing is off: on AWS it is X-Ray through Powertools Tracer (powertools-tracing.ts), loaded
// only where tracing can be on (loadTracing below); elsewhere (local mode, tests, benchmarks) NO_TRACING.
/** What X-Ray can index: strings, numbers, booleans. */
export type AnnotationValue = string | number | boolean;
export type Annotations = Readonly<Record<string, AnnotationValue>>;

export interface Span {
  /**
   * An indexed, searchable value (an X-Ray annotation): ids, page numbers, correlation ids. Never customer
   * data and never a secret. Keys: letters and digits only (X-Ray's rule).
   */
  annotate(key: string, value: AnnotationValue): void;
  /** A value shown in the trace but not searchable (X-Ray metadata): counts, outcomes. Same rules. */
  detail(key: string, value: AnnotationValue): void;
}

export interface Tracing {
  /**
   * Runs `work` inside a span named `name`, nested under the span it is called from, with `annotations`.
   * A span whose work throws is marked as failed (the error's name and message) and the error rethrown.
   */
  span<T>(name: string, annotations: Annotations, work: (span: Span) => Promise<T>): Promise<T>;
}

/** A span that records nothing. */
export const NO_SPAN: Span = { annotate: () => undefined, detail: () => undefined };

/** The default everywhere: runs the work, records nothing. */
export const NO_TRACING: Tracing = { span: (_name, _annotations, work) => work(NO_SPAN) };

/** What a handler module gets: the tracing port, and the hook that traces its AWS SDK clients. */
export interface FunctionTracing {
  tracing: Tracing;
  /** Records each call of the client as a span (service, operation, retries) and sends the trace header on. */
  captureClient<Client>(client: Client): Client;
}

/**
 * Tracing for a handler module, at cold start. Powertools Tracer (with the X-Ray SDK under it) is imported
 * only inside Lambda (AWS_EXECUTION_ENV set) and unless POWERTOOLS_TRACE_ENABLED is "false": the X-Ray SDK
 * turns on an async hook for the whole process when it is imported, which slows every promise even with
 * tracing off, and its import is a measurable part of the cold start (functions/README.md, Tracing).
 * Powertools then applies its own rules too (off under SAM local and Amplify mocks).
 */
export async function loadTracing(serviceName: string): Promise<FunctionTracing> {
  const { AWS_EXECUTION_ENV, POWERTOOLS_TRACE_ENABLED } = process.env;
  if (!AWS_EXECUTION_ENV || POWERTOOLS_TRACE_ENABLED?.toLowerCase() === 'false') {
    return { tracing: NO_TRACING, captureClient: (client) => client };
  }
  const { powertoolsFunctionTracing } = await import('./powertools-tracing.js');
  return powertoolsFunctionTracing(serviceName);
}
