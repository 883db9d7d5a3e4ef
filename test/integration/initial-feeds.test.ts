// The dispatcher's cold start on moto: the initial set read from the S3 object its environment names (the
// stack's file asset, INITIAL_FEEDS_OBJECT), and the registry rows a dispatch seeds from it. The set's rules
// key by key: test/unit/config/function-config.test.ts; the asset in the template: test/infra/stack.test.ts.
import { Logger } from '@aws-lambda-powertools/logger';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { DynamoFeedRegistry } from '../../functions/core/adapters/dynamo-feed-registry.js';
import { initialFeedsText } from '../../functions/core/fleet/feed-config.js';
import { buildDispatcher } from '../../functions/dispatcher/build-dispatcher.js';
import { readDispatcherConfig } from '../../functions/dispatcher/config.js';
import { lambdaContext } from '../../tools/local/lambda-context.js';
import { pipelineOnMoto } from '../support/handlers.js';

const silent = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
const pipeline = pipelineOnMoto();
const KEY = 'assets/0123abcd.json';

describe('the initial set as an S3 object', () => {
  it('seeds a row per feed of the object INITIAL_FEEDS_OBJECT names, more than 4 KB of them, disabled ones paused', async () => {
    const { aws, resources } = pipeline;
    const feeds = Array.from({ length: 120 }, (_, index) => ({
      id: `merchant-${String(index).padStart(4, '0')}`,
      vendorIds: [`vendor-${index}`],
      ...(index === 7 ? { paused: true as const } : {}),
    }));
    const text = initialFeedsText({ tokenParameterName: resources.tokenParameter }, feeds);
    // Beyond Lambda's 4 KB environment (a thousand feeds synthesize: test/infra; seeding them here takes minutes).
    expect(Buffer.byteLength(text)).toBeGreaterThan(4096);
    await aws.s3.send(new PutObjectCommand({ Bucket: resources.quarantineBucket, Key: KEY, Body: text }));
    const env = {
      CURSOR_TABLE_NAME: resources.cursorTable,
      POLLER_FUNCTION_NAME: 'poller',
      INITIAL_FEEDS_OBJECT: `s3://${resources.quarantineBucket}/${KEY}`,
    };

    const config = await readDispatcherConfig(env, aws.s3);
    const dispatcher = buildDispatcher({ dynamo: aws.dynamo, ssm: aws.ssm, lambda: aws.lambda }, config, {
      startPoller: async () => undefined,
      tokenVersion: async () => undefined,
      unreservedConcurrency: async () => undefined,
      logger: silent,
    });
    const result = await dispatcher({}, lambdaContext('dispatcher', 60_000));

    expect(result.seeded).toHaveLength(120);
    const rows = await new DynamoFeedRegistry(aws.dynamo, resources.cursorTable).scan();
    const registered = rows.filter((row) => row.registered);
    expect(registered.map((row) => row.feedId).sort()).toEqual(feeds.map((feed) => feed.id));
    expect(registered.filter((row) => row.state === 'paused').map((row) => row.feedId)).toEqual([
      'merchant-0007',
    ]);
  });

  it('fails the cold start naming INITIAL_FEEDS_OBJECT when the object is missing or a feed is bad', async () => {
    const { aws, resources } = pipeline;
    const env = {
      CURSOR_TABLE_NAME: resources.cursorTable,
      POLLER_FUNCTION_NAME: 'poller',
      INITIAL_FEEDS_OBJECT: `s3://${resources.quarantineBucket}/${KEY}`,
    };

    await expect(readDispatcherConfig(env, aws.s3)).rejects.toThrow(
      `configuration error: INITIAL_FEEDS_OBJECT cannot be read (NoSuchKey): s3://${resources.quarantineBucket}/${KEY}`,
    );
    const bad = initialFeedsText({ tokenParameterName: '/t' }, [{ id: 'eu', pageSize: 101 }]);
    await aws.s3.send(new PutObjectCommand({ Bucket: resources.quarantineBucket, Key: KEY, Body: bad }));
    await expect(readDispatcherConfig(env, aws.s3)).rejects.toThrow(
      'configuration error: INITIAL_FEEDS_OBJECT feeds[0].pageSize: must be an integer from 1 to 100',
    );
  });
});
