// Scenarios about the transport: authentication, paging, faults, expiry, the empty stream.
// Their data comes from the feed generator with fixed seeds (epoch-ms timestamps, no stream defects).

import { generatedPoll, latestAtServeTime, type ScenarioDefinition } from './build.js';

export const authentication: ScenarioDefinition = {
  id: 'test-authentication',
  summary: 'normal 200 stream, 12 versions (2 pages at pageSize 10)',
  polls: latestAtServeTime(generatedPoll({ seed: 101, idBase: 3_001_000_000, versions: 12, vendors: 2 })),
};

export const invalidToken: ScenarioDefinition = {
  id: 'test-invalid-token',
  summary: 'every request answers 401 Unauthorized, even with the right token',
  polls: [[]],
};

export const pagination: ScenarioDefinition = {
  id: 'test-pagination',
  summary: 'large backlog: 230 versions in one poll (23 pages at pageSize 10)',
  polls: latestAtServeTime(generatedPoll({ seed: 103, idBase: 3_003_000_000, versions: 230, vendors: 3 })),
};

export const rateLimit: ScenarioDefinition = {
  id: 'test-rate-limit',
  summary: '25 versions; the 2nd page request of a run answers 429 + Retry-After, once per run',
  polls: latestAtServeTime(generatedPoll({ seed: 104, idBase: 3_004_000_000, versions: 25, vendors: 2 })),
};

export const transientError: ScenarioDefinition = {
  id: 'test-transient-error',
  summary: '25 versions; the 2nd page request of a run answers 503 once, then succeeds',
  polls: latestAtServeTime(generatedPoll({ seed: 105, idBase: 3_005_000_000, versions: 25, vendors: 2 })),
};

export const expiredPageId: ScenarioDefinition = {
  id: 'test-expired-page-id',
  summary: 'one page of 5 versions whose nextPageId is already expired (404 pageId not found)',
  polls: latestAtServeTime(generatedPoll({ seed: 106, idBase: 3_006_000_000, versions: 5, vendors: 1 })),
};

export const emptyStream: ScenarioDefinition = {
  id: 'test-empty-stream',
  summary: 'empty stream: data [], hasMore false, no nextPageId',
  polls: [[]],
};
