// Local mode without --verbose: the handlers print no JSON line of their own; each warning or error they log is
// one of local mode's notes, the first time its message comes, with the error it names.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createObservability } from '../../../functions/core/observability/powertools.js';
import { noteLogs } from '../../../tools/local/local-pipeline.js';

afterEach(() => vi.restoreAllMocks());

describe('noteLogs', () => {
  it('turns each distinct warning or error into one note, printing nothing itself', () => {
    const written: string[] = [];
    for (const stream of [process.stdout, process.stderr]) {
      vi.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
        written.push(String(chunk));
        return true;
      });
    }
    // The environment local mode gives a handler without --verbose (local-pipeline.ts, handlerEnvironments).
    const { logger } = createObservability('order-feed-poller', { POWERTOOLS_LOG_LEVEL: 'SILENT' }, 'eu');
    const notes: string[] = [];
    noteLogs(logger, (note) => notes.push(note), 'poller');

    logger.warn('partner answered hasMore with a cursor it was already sent; ending the run', {
      feedId: 'eu',
    });
    logger.warn('partner answered hasMore with a cursor it was already sent; ending the run', {
      feedId: 'eu',
    });
    logger.warn('partner API call will be retried', { feedId: 'eu', error: 'connect ECONNREFUSED' });
    logger.error('poll run failed; the next run resumes from the committed cursor', {
      error: { name: 'Error', message: 'queue unavailable' },
    });
    logger.info('poll run finished', { feedId: 'eu' });

    expect(notes).toEqual([
      'poller: partner answered hasMore with a cursor it was already sent; ending the run',
      'poller: partner API call will be retried: connect ECONNREFUSED',
      'poller: poll run failed; the next run resumes from the committed cursor: queue unavailable',
    ]);
    expect(written).toEqual([]);
  });
});
