// The 17 canned scenarios of the test environment (spec section 4), by id.

import type { ScenarioId } from '../types.js';
import type { ScenarioDefinition } from './build.js';
import {
  delivery,
  itemsAndOptions,
  multiLocation,
  payments,
  priceAdjustments,
  substitutions,
  vouchers,
} from './content.js';
import { orderLifecycle, outOfOrderVersions, versioning } from './lifecycle.js';
import {
  authentication,
  emptyStream,
  expiredPageId,
  invalidToken,
  pagination,
  rateLimit,
  transientError,
} from './streams.js';

export type { ScenarioDefinition, ScenarioEntry } from './build.js';

export const SCENARIOS: Readonly<Record<ScenarioId, ScenarioDefinition>> = {
  'test-authentication': authentication,
  'test-invalid-token': invalidToken,
  'test-pagination': pagination,
  'test-rate-limit': rateLimit,
  'test-transient-error': transientError,
  'test-expired-page-id': expiredPageId,
  'test-empty-stream': emptyStream,
  'test-order-lifecycle': orderLifecycle,
  'test-versioning': versioning,
  'test-out-of-order-versions': outOfOrderVersions,
  'test-items-and-options': itemsAndOptions,
  'test-substitutions': substitutions,
  'test-price-adjustments': priceAdjustments,
  'test-vouchers': vouchers,
  'test-payments': payments,
  'test-delivery': delivery,
  'test-multi-location': multiLocation,
};
