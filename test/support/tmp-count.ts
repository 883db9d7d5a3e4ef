import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { S3Client } from '@aws-sdk/client-s3';
import { SSMClient } from '@aws-sdk/client-ssm';
import { afterAll } from 'vitest';
const counts: Record<string, number> = {};
for (const C of [DynamoDBClient, SQSClient, S3Client, SSMClient] as any[]) {
  const orig = C.prototype.send;
  C.prototype.send = function (cmd: any, ...rest: any[]) {
    counts[cmd.constructor.name] = (counts[cmd.constructor.name] ?? 0) + 1;
    return orig.call(this, cmd, ...rest);
  };
}
afterAll(() => { console.log('COUNTS', JSON.stringify(Object.entries(counts).sort((a,b)=>b[1]-a[1]))); });
