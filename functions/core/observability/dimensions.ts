// Metric dimensions the functions publish beyond Powertools' own `service`. The stack's alarms and dashboard
// (infra/constructs/monitoring.ts) select series by these names, so they are declared once, here.

/** Each poller metric is published twice: under `service` (the deployment) and `service` + FeedId (its feed). */
export const FEED_ID_DIMENSION = 'FeedId';

/**
 * Every metric of a function also carries its ingester instance (the stack's name and the construct's path), so
 * two instances in one account and region publish apart and each one's alarms watch only its own.
 */
export const INGESTER_DIMENSION = 'Ingester';
