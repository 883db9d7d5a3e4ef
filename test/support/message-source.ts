// The source of an order version message as the poller writes it, for the tests that build messages.
import type { MessageSource } from '../../functions/core/contract/order-version-message.js';

/** A poll page's source, with what a test needs changed. */
export const messageSource = (overrides: Partial<MessageSource> = {}): MessageSource => ({
  feedId: 'partner-feed',
  pageId: 'cursor-7',
  fetchedAt: '2024-05-01T08:00:00.000Z',
  findings: [],
  correlationId: 'poll:run-1:1',
  origin: 'poll',
  ...overrides,
});
