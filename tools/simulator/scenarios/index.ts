// The 17 canned scenarios of the test environment (spec section 4), then the hostile ones and the named
// faults, by id.

import type { AnyScenarioId } from '../types.js';
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
import {
  cursorCycle,
  deepExpiry,
  html200,
  largeOrders,
  overLongValues,
  recordFlood,
  redirect,
  trickle,
} from './hostile.js';
import { orderLifecycle, outOfOrderVersions, versioning } from './lifecycle.js';
import { NAMED_FAULT_SCENARIOS } from './named-faults.js';
import {
  authentication,
  emptyStream,
  expiredPageId,
  invalidToken,
  pagination,
  rateLimit,
  transientError,
} from './streams.js';

export type { ScenarioDefinition, ScenarioEntry, ScenarioQuirk } from './build.js';

export const SCENARIOS: Readonly<Record<AnyScenarioId, ScenarioDefinition>> = {
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
  'large-orders': largeOrders,
  trickle,
  redirect,
  'html-200': html200,
  'cursor-cycle': cursorCycle,
  'record-flood': recordFlood,
  'over-long-values': overLongValues,
  'deep-expiry': deepExpiry,
  ...NAMED_FAULT_SCENARIOS,
};
