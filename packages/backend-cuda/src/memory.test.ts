// Size classes of the memory pool: pure arithmetic, checked against hand-computed classes.
import { describe, expect, it } from "vitest";
import { CudaError } from "./errors.js";
import { blockSize } from "./memory.js";

describe("blockSize", () => {
  it("rounds small requests up to 256 bytes and powers of two up to 1 MiB", () => {
    expect([0, 1, 256, 257, 1000, 4096, 4097, 1 << 20].map(blockSize)).toEqual([
      256,
      256,
      256,
      512,
      1024,
      4096,
      8192,
      1 << 20,
    ]);
  });
  it("rounds large requests up to whole MiB", () => {
    // 2048 x 2048 bf16 = 8 MiB exactly; 2048 x 2048 x 2 + 1 needs one more MiB; 128256 x 2048 bf16 = 501 MiB.
    expect(blockSize(8 << 20)).toBe(8 << 20);
    expect(blockSize((8 << 20) + 1)).toBe(9 << 20);
    expect(blockSize(128256 * 2048 * 2)).toBe(501 << 20);
  });
  it("refuses negative and fractional sizes with a typed error", () => {
    for (const bad of [-1, 1.5, Number.NaN]) {
      const e = (() => {
        try {
          blockSize(bad);
        } catch (x) {
          return x;
        }
        return undefined;
      })();
      expect(e).toBeInstanceOf(CudaError);
      expect((e as CudaError).code).toBe("bad-argument");
    }
  });
});
