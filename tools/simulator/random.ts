// Seeded pseudo-random numbers (mulberry32): same seed, same sequence, on every platform.

export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** mulberry32: a 32-bit seeded generator of floats in [0, 1). */
  private nextFloat(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.nextFloat();
  }

  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.nextFloat() * (max - min + 1));
  }

  /** true with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.nextFloat() < p;
  }

  pick<T>(values: readonly T[]): T {
    const value = values[Math.floor(this.nextFloat() * values.length)];
    if (value === undefined) throw new Error('Random.pick: empty list');
    return value;
  }

  /** Picks by relative weight: `weighted([['a', 3], ['b', 1]])` returns 'a' three times as often. */
  weighted<T>(choices: ReadonlyArray<readonly [T, number]>): T {
    const sum = choices.reduce((acc, [, weight]) => acc + weight, 0);
    let roll = this.nextFloat() * sum;
    for (const [value, weight] of choices) {
      roll -= weight;
      if (roll < 0) return value;
    }
    const last = choices[choices.length - 1];
    if (last === undefined) throw new Error('Random.weighted: empty list');
    return last[0];
  }
}
