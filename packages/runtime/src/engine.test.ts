// Prefill chunking: power-of-two chunks, largest first, covering the prompt exactly.
import { describe, expect, it } from "vitest";
import { prefillChunks } from "./engine.js";

describe("prefillChunks", () => {
  it("splits by the binary digits of the remainder below the chunk size", () => {
    expect(prefillChunks(100, 64)).toEqual([64, 32, 4]);
    expect(prefillChunks(20, 16)).toEqual([16, 4]);
    expect(prefillChunks(1, 64)).toEqual([1]);
    expect(prefillChunks(130, 64)).toEqual([64, 64, 2]);
    expect(prefillChunks(0, 8)).toEqual([]);
  });

  it("every chunk is a power of two no larger than the maximum, and they sum to n", () => {
    for (let n = 1; n <= 300; n++) {
      const c = prefillChunks(n, 32);
      expect(c.reduce((a, b) => a + b, 0)).toBe(n);
      for (const x of c) expect(x & (x - 1)).toBe(0);
      expect(Math.max(...c)).toBeLessThanOrEqual(32);
    }
  });
});
