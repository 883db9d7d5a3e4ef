// The AWS limits that partner data can reach, in one place (AWS's documented quotas, checked 2026-11-25).
// moto enforces none of them (/work/shared/LOCAL-AWS.md), so the code checks each before the call that AWS
// would refuse, and unit tests show the checks.

/**
 * DynamoDB: a partition key value is 1 to 2,048 bytes (UTF-8 for a string), in the table and every index. (A
 * sort key's is 1 to 1,024 bytes; ours are all int64 numbers.)
 */
export const DYNAMO_MAX_PARTITION_KEY_BYTES = 2048;
/** DynamoDB: an item, attribute names included, is at most 400 KB. */
export const DYNAMO_MAX_ITEM_BYTES = 400 * 1024;
/** S3: an object key is at most 1,024 bytes of UTF-8. */
export const S3_MAX_KEY_BYTES = 1024;
/**
 * SQS: a message, body plus attributes, at most 1 MiB, which the stack sets on every queue (the default is
 * 256 KiB).
 */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;
/** SQS: message attributes per message. */
export const SQS_MAX_MESSAGE_ATTRIBUTES = 10;
