// The bench's order-history section from two pipeline measurements (history on and off): its cost against the
// floor of one more conditional write per version, the throughput on and off, and the storage per month.
import { describe, expect, it } from 'vitest';
import { historySection } from '../bench/model.js';
import type { PipelineMeasurement } from '../bench/pipeline.js';
import { PRICES } from '../bench/prices.js';

function measured(history: boolean, consumeWallMs: number): PipelineMeasurement {
  return {
    versions: 1000,
    consume: { wallMs: consumeWallMs, handlerMs: consumeWallMs / 2 },
    writes: {
      tableWriteUnits: 2000,
      indexWriteUnits: 300,
      historyPutItems: history ? 1010 : 0,
      // 1,000 new entries of 2 KB, 10 redeliveries charged the stored item.
      historyWriteUnits: history ? 2020 : 0,
      historyFloorWriteUnits: history ? 2000 : 0,
      meanHistoryItemBytes: history ? 1948 : 0,
      meanStoredItemBytes: 1800,
    },
  } as unknown as PipelineMeasurement;
}

describe('historySection', () => {
  it('prices the history writes against one more write of each version’s orders item', () => {
    const section = historySection(measured(true, 4000), measured(false, 3000));
    const figure = (label: string) => section.figures.find((f) => f.label === label);

    expect(figure('history writes (WRU)')).toMatchObject({
      value: 2020 * 1000 * PRICES.dynamoPerWriteRequestUnit,
      floor: 2000 * 1000 * PRICES.dynamoPerWriteRequestUnit,
    });
    expect(figure('DynamoDB writes, history off')?.value).toBeCloseTo(
      2300 * 1000 * PRICES.dynamoPerWriteRequestUnit,
    );
    expect(figure('consumer throughput, history on')?.value).toBe(250);
    expect(figure('consumer throughput, history off')?.value).toBeCloseTo(333.33, 1);
    // (1,948 + 100) bytes x 1e6 = 2,048,000,000 bytes ≈ 1.907 GB at $0.25.
    expect(figure('history storage per million versions kept')?.value).toBeCloseTo(
      (2048e6 / 2 ** 30) * 0.25,
      6,
    );
  });
});
