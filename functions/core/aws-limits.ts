// The AWS limits partner data can reach (documented quotas, checked 2026-11-25). moto enforces none of them,
// so the code checks each before the call AWS would refuse.

/** In the table and every index; UTF-8 bytes. */
export const DYNAMO_MAX_PARTITION_KEY_BYTES = 2048;
/** Attribute names included. */
export const DYNAMO_MAX_ITEM_BYTES = 400 * 1024;
export const S3_MAX_KEY_BYTES = 1024;
/** Body plus attributes; the stack sets it on every queue (the default is 256 KiB). */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;
export const SQS_MAX_MESSAGE_ATTRIBUTES = 10;
