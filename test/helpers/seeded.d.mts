/** A small seeded generator (mulberry32): numbers in [0, 1), the same sequence for the same seed, so a failing run can be replayed. */
export function seeded(seed: number): () => number;
