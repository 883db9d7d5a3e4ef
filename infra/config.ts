// Deployment configuration: read from CDK context, checked at synth so a bad value fails with its key's name.
//
// Sources, later ones winning:
//   1. cdk.json  "context": { "orderFeed": { "partnerBaseUrl": "https://…", … } }
//   2. -c orderFeed='{"partnerBaseUrl":"https://…",…}'        (the whole object as JSON)
//   3. -c orderFeed.pageSize=50                                (one key; lists as JSON or comma-separated)
// Every key and its default is listed in KEYS below; unknown keys are rejected so a typo is not silently ignored.
import { Duration } from 'aws-cdk-lib';
import { parseRateExpression } from './schedule-rate.js';

export const CONTEXT_KEY = 'orderFeed';

export type ArrayQueryEncoding = 'repeat' | 'comma';
export type RemovalPolicyChoice = 'retain' | 'destroy';

export interface OrderFeedConfig {
  /** Partner API base (https; http only for loopback hosts), without a trailing slash. */
  readonly partnerBaseUrl: string;
  /** Name of an existing SSM SecureString parameter holding the partner bearer token (never the token). */
  readonly tokenParameterName: string;
  /** Customer-managed KMS key of the token parameter; omitted: the AWS-managed `alias/aws/ssm` key. */
  readonly tokenKmsKeyArn: string | undefined;
  readonly feedId: string;
  /** How often the poller runs. */
  readonly scheduleInterval: Duration;
  readonly pageSize: number;
  readonly maxPagesPerRun: number;
  readonly minAgeMinutes: number | undefined;
  readonly vendorIds: readonly string[] | undefined;
  readonly arrayQueryEncoding: ArrayQueryEncoding;
  readonly cursorRecoveryLookbackMinutes: number | undefined;
  /** One SQS queue (plus DLQ) each; the poller sends every order version to all of them. */
  readonly downstreamSubscribers: readonly string[];
  /** Receives before a message moves to its queue's dead-letter queue. */
  readonly maxReceiveCount: number;
  readonly consumerBatchSize: number;
  readonly consumerMaxBatchingWindowSeconds: number;
  readonly consumerMaxConcurrency: number;
  /** Alarm when the feed has not caught up for this long (or the poller stops reporting). */
  readonly alarmLagMinutes: number;
  /** Alarm when the oldest message on the orders queue is older than this. */
  readonly alarmQueueAgeMinutes: number;
  readonly alarmTopicArn: string | undefined;
  readonly metricsNamespace: string;
  readonly logRetentionDays: number;
  /** What happens to tables, bucket, queues and log groups when the stack is deleted. */
  readonly removalPolicy: RemovalPolicyChoice;
}

export interface ConfigIssue {
  /** The context key at fault, e.g. `orderFeed.pageSize`. */
  readonly key: string;
  readonly message: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(
      `Invalid deployment configuration (CDK context "${CONTEXT_KEY}"):\n${issues
        .map((issue) => `  - ${issue.key}: ${issue.message}`)
        .join('\n')}`,
    );
    this.issues = issues;
  }
}

/** Anything with CDK's `tryGetContext` (an `App`'s or a stack's `node`). */
export interface ContextReader {
  tryGetContext(key: string): unknown;
}

// CloudWatch Logs accepts only these retention periods (days).
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

/** Every accepted key with its default (undefined: optional or required, see `parseConfig`). */
export const KEYS = {
  partnerBaseUrl: undefined,
  tokenParameterName: undefined,
  tokenKmsKeyArn: undefined,
  feedId: 'orders',
  schedule: 'rate(5 minutes)',
  pageSize: 100,
  maxPagesPerRun: 50,
  minAgeMinutes: undefined,
  vendorIds: undefined,
  arrayQueryEncoding: 'repeat',
  cursorRecoveryLookbackMinutes: undefined,
  downstreamSubscribers: [],
  maxReceiveCount: 5,
  consumerBatchSize: 10,
  consumerMaxBatchingWindowSeconds: 0,
  consumerMaxConcurrency: 5,
  alarmLagMinutes: 30,
  alarmQueueAgeMinutes: 15,
  alarmTopicArn: undefined,
  metricsNamespace: 'OrderFeedIngester',
  logRetentionDays: 30,
  removalPolicy: 'retain',
} as const satisfies Record<string, unknown>;

export type ConfigKey = keyof typeof KEYS;
const KEY_NAMES = Object.keys(KEYS) as ConfigKey[];

/** Reads `orderFeed` and `orderFeed.<key>` from CDK context and validates them. */
export function loadConfig(context: ContextReader): OrderFeedConfig {
  const issues: ConfigIssue[] = [];
  const raw: Record<string, unknown> = {};
  const whole = context.tryGetContext(CONTEXT_KEY);
  if (whole !== undefined) {
    const object = typeof whole === 'string' ? parseJsonObject(whole) : whole;
    if (object === undefined || typeof object !== 'object' || object === null || Array.isArray(object)) {
      issues.push({ key: CONTEXT_KEY, message: 'must be an object (or a JSON object string)' });
    } else {
      Object.assign(raw, object);
    }
  }
  for (const key of KEY_NAMES) {
    const override = context.tryGetContext(`${CONTEXT_KEY}.${key}`);
    if (override !== undefined) raw[key] = override;
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return parseConfig(raw);
}

/** Validates a raw configuration object (values may be JSON-typed or the strings `-c` passes). */
export function parseConfig(raw: Readonly<Record<string, unknown>>): OrderFeedConfig {
  const issues: ConfigIssue[] = [];
  const field = new FieldReader(raw, issues);

  for (const key of Object.keys(raw)) {
    if (!(key in KEYS)) {
      issues.push({ key: qualified(key), message: `unknown key (accepted: ${KEY_NAMES.join(', ')})` });
    }
  }

  const partnerBaseUrl = field.required('partnerBaseUrl', checkPartnerBaseUrl);
  const tokenParameterName = field.required('tokenParameterName', checkParameterName);
  const tokenKmsKeyArn = field.optional('tokenKmsKeyArn', (value) =>
    matchString(value, /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/, 'a KMS key ARN'),
  );
  const feedId = field.withDefault('feedId', (value) =>
    matchString(value, /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" or "-" (1 to 64)'),
  );
  const scheduleInterval = field.withDefault('schedule', checkSchedule);
  const pageSize = field.withDefault('pageSize', integerIn(1, 100));
  const maxPagesPerRun = field.withDefault('maxPagesPerRun', integerIn(1, 1000));
  const minAgeMinutes = field.optional('minAgeMinutes', integerIn(1, 1440));
  const vendorIds = field.optional('vendorIds', checkVendorIds);
  const arrayQueryEncoding = field.withDefault('arrayQueryEncoding', oneOf(['repeat', 'comma'] as const));
  const cursorRecoveryLookbackMinutes = field.optional(
    'cursorRecoveryLookbackMinutes',
    integerIn(1, 60 * 24 * 366 * 3),
  );
  const downstreamSubscribers = field.withDefault('downstreamSubscribers', checkSubscribers);
  const maxReceiveCount = field.withDefault('maxReceiveCount', integerIn(1, 1000));
  const consumerBatchSize = field.withDefault('consumerBatchSize', integerIn(1, 10_000));
  const consumerMaxBatchingWindowSeconds = field.withDefault(
    'consumerMaxBatchingWindowSeconds',
    integerIn(0, 300),
  );
  const consumerMaxConcurrency = field.withDefault('consumerMaxConcurrency', integerIn(2, 1000));
  const alarmLagMinutes = field.withDefault('alarmLagMinutes', integerIn(1, 1440));
  const alarmQueueAgeMinutes = field.withDefault('alarmQueueAgeMinutes', integerIn(1, 20_160));
  const alarmTopicArn = field.optional('alarmTopicArn', (value) =>
    matchString(
      value,
      /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/,
      'an SNS topic ARN',
    ),
  );
  const metricsNamespace = field.withDefault('metricsNamespace', checkNamespace);
  const logRetentionDays = field.withDefault('logRetentionDays', (value) => {
    const days = integerIn(1, 3653)(value);
    if (!LOG_RETENTION_DAYS.includes(days))
      throw new Error(`must be one of ${LOG_RETENTION_DAYS.join(', ')}`);
    return days;
  });
  const removalPolicy = field.withDefault('removalPolicy', oneOf(['retain', 'destroy'] as const));

  // Rules across keys.
  if (consumerBatchSize !== undefined && consumerBatchSize > 10 && consumerMaxBatchingWindowSeconds === 0) {
    issues.push({
      key: qualified('consumerBatchSize'),
      message: 'above 10 needs consumerMaxBatchingWindowSeconds of at least 1 (an SQS event source rule)',
    });
  }
  if (
    alarmLagMinutes !== undefined &&
    scheduleInterval !== undefined &&
    alarmLagMinutes <= scheduleInterval.toMinutes()
  ) {
    issues.push({
      key: qualified('alarmLagMinutes'),
      message: `must exceed the schedule interval (${scheduleInterval.toMinutes()} minutes), or it alarms between runs`,
    });
  }

  if (issues.length > 0) throw new ConfigError(issues);
  // Every required/defaulted field is defined here: each failure above added an issue.
  return {
    partnerBaseUrl: defined(partnerBaseUrl),
    tokenParameterName: defined(tokenParameterName),
    tokenKmsKeyArn,
    feedId: defined(feedId),
    scheduleInterval: defined(scheduleInterval),
    pageSize: defined(pageSize),
    maxPagesPerRun: defined(maxPagesPerRun),
    minAgeMinutes,
    vendorIds,
    arrayQueryEncoding: defined(arrayQueryEncoding),
    cursorRecoveryLookbackMinutes,
    downstreamSubscribers: defined(downstreamSubscribers),
    maxReceiveCount: defined(maxReceiveCount),
    consumerBatchSize: defined(consumerBatchSize),
    consumerMaxBatchingWindowSeconds: defined(consumerMaxBatchingWindowSeconds),
    consumerMaxConcurrency: defined(consumerMaxConcurrency),
    alarmLagMinutes: defined(alarmLagMinutes),
    alarmQueueAgeMinutes: defined(alarmQueueAgeMinutes),
    alarmTopicArn,
    metricsNamespace: defined(metricsNamespace),
    logRetentionDays: defined(logRetentionDays),
    removalPolicy: defined(removalPolicy),
  };
}

/** `orders-audit` → `OrdersAudit`: the subscriber's part of construct ids and output names. */
export function pascalCase(name: string): string {
  return name
    .split('-')
    .filter((part) => part.length > 0)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

// ---------------------------------------------------------------------------------------------------------------

type Check<T> = (value: unknown) => T;

class FieldReader {
  constructor(
    private readonly raw: Readonly<Record<string, unknown>>,
    private readonly issues: ConfigIssue[],
  ) {}

  required<T>(key: ConfigKey, check: Check<T>): T | undefined {
    const value = this.raw[key];
    if (value === undefined || value === null || value === '') {
      this.issues.push({
        key: qualified(key),
        message: `is required (set it in cdk.json "context"."${CONTEXT_KEY}" or pass -c ${qualified(key)}=…)`,
      });
      return undefined;
    }
    return this.run(key, value, check);
  }

  optional<T>(key: ConfigKey, check: Check<T>): T | undefined {
    const value = this.raw[key];
    if (value === undefined || value === null || value === '') return undefined;
    return this.run(key, value, check);
  }

  withDefault<T>(key: ConfigKey, check: Check<T>): T | undefined {
    const value = this.raw[key];
    if (value === undefined || value === null || value === '') return this.run(key, KEYS[key], check);
    return this.run(key, value, check);
  }

  private run<T>(key: ConfigKey, value: unknown, check: Check<T>): T | undefined {
    try {
      return check(value);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      this.issues.push({ key: qualified(key), message: `${reason} (got ${describe(value)})` });
      return undefined;
    }
  }
}

function qualified(key: string): string {
  return `${CONTEXT_KEY}.${key}`;
}

function defined<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('configuration value missing after validation');
  return value;
}

function describe(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function parseJsonObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function asString(value: unknown): string {
  if (typeof value !== 'string') throw new Error('must be a string');
  return value.trim();
}

function matchString(value: unknown, pattern: RegExp, expected: string): string {
  const text = asString(value);
  if (!pattern.test(text)) throw new Error(`must be ${expected}`);
  return text;
}

function integerIn(min: number, max: number): Check<number> {
  return (value) => {
    const number = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
    if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
      throw new Error(`must be an integer from ${min} to ${max}`);
    }
    return number;
  };
}

function oneOf<const T extends string>(choices: readonly T[]): Check<T> {
  return (value) => {
    const text = asString(value);
    const match = choices.find((choice) => choice === text);
    if (match === undefined) throw new Error(`must be one of ${choices.map((c) => `"${c}"`).join(', ')}`);
    return match;
  };
}

/** An array, a JSON array string, or a comma-separated string. */
function stringList(value: unknown): string[] {
  let list: unknown = value;
  if (typeof value === 'string') {
    const text = value.trim();
    list = text.startsWith('[') ? parseJsonArray(text) : text.split(',');
  }
  if (!Array.isArray(list) || !list.every((item) => typeof item === 'string')) {
    throw new Error('must be a list of strings (a JSON array or comma-separated)');
  }
  return list.map((item) => item.trim()).filter((item) => item.length > 0);
}

function parseJsonArray(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error('is not a valid JSON array');
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

function checkPartnerBaseUrl(value: unknown): string {
  const text = asString(value);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('must be an absolute URL such as https://partner.example.com');
  }
  const loopback = LOOPBACK_HOSTS.has(url.hostname) || /^127(\.\d{1,3}){3}$/.test(url.hostname);
  if (url.protocol === 'http:' && !loopback) {
    throw new Error('must use https (http is accepted only for loopback hosts such as localhost)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('must be an https URL');
  if (url.username !== '' || url.password !== '') {
    throw new Error('must not carry credentials; the token comes from tokenParameterName');
  }
  if (url.search !== '' || url.hash !== '') throw new Error('must not have a query string or fragment');
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

function checkParameterName(value: unknown): string {
  const text = asString(value);
  if (text.startsWith('arn:')) throw new Error('must be the parameter name, not its ARN');
  const hierarchical = /^(\/[A-Za-z0-9_.-]+)+$/.test(text);
  const plain = /^[A-Za-z0-9_.-]+$/.test(text);
  if (!hierarchical && !plain) {
    throw new Error(
      'must be an SSM parameter name: "/path/name" or a plain name (letters, digits, "_", ".", "-")',
    );
  }
  // A plain "name" that is long or shaped like a JWT is most likely the token pasted by mistake.
  if (plain && (text.startsWith('eyJ') || text.length >= 40)) {
    throw new Error('looks like a secret value; give the name of the SSM parameter that holds the token');
  }
  if (/^\/?(aws|ssm)/i.test(text))
    throw new Error('must not start with the reserved prefixes "aws" or "ssm"');
  if (text.length > 1011) throw new Error('must be at most 1011 characters');
  return text;
}

function checkSchedule(value: unknown): Duration {
  const minutes =
    typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value.trim()))
      ? Number(value)
      : rateMinutes(asString(value));
  // Longer intervals would stretch the lag alarm's evaluation window past what CloudWatch accepts.
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 60) {
    throw new Error('must be between 1 minute and 1 hour');
  }
  return Duration.minutes(minutes);
}

function rateMinutes(text: string): number {
  const rate = parseRateExpression(text);
  if (rate === undefined) {
    throw new Error('must be a rate expression such as "rate(5 minutes)" or a number of minutes');
  }
  if ((rate.amount === 1) !== !rate.unit.endsWith('s')) {
    throw new Error('must use the singular unit for 1 and the plural otherwise, e.g. "rate(1 minute)"');
  }
  return rate.minutes;
}

function checkVendorIds(value: unknown): string[] {
  const ids = stringList(value);
  if (ids.length === 0) throw new Error('must list at least one vendor id when set');
  for (const id of ids) {
    if (!/^[A-Za-z0-9._:-]{1,128}$/.test(id)) {
      throw new Error(`has an invalid vendor id "${id}" (letters, digits, ".", "_", ":" or "-")`);
    }
  }
  if (new Set(ids).size !== ids.length) throw new Error('must not repeat a vendor id');
  return ids;
}

function checkSubscribers(value: unknown): string[] {
  const names = stringList(value);
  for (const name of names) {
    if (!/^[a-z][a-z0-9-]{0,39}$/.test(name) || name.endsWith('-') || name.includes('--')) {
      throw new Error(
        `has an invalid subscriber name "${name}" (lower-case letter first, then lower-case letters, digits and single "-", at most 40)`,
      );
    }
  }
  // Construct ids and output names use the PascalCase form, which must stay unique too.
  const forms = names.map((name) => pascalCase(name).toLowerCase());
  if (new Set(forms).size !== names.length) {
    throw new Error('must not repeat a subscriber name (names differing only by "-" also collide)');
  }
  return names;
}

function checkNamespace(value: unknown): string {
  const text = matchString(
    value,
    /^[A-Za-z0-9._#:/ -]{1,255}$/,
    'a CloudWatch namespace (letters, digits, ".", "_", "-", "/", "#", ":" or space)',
  );
  if (text.startsWith('AWS/')) throw new Error('must not start with the reserved "AWS/"');
  return text;
}
