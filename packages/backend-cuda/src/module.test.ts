// The cubin cache key: one entry per (PTX text, arch, driver), so a new driver or device never reuses a cubin.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ptxCacheKey } from "./module.js";

describe("ptxCacheKey", () => {
  it("is the SHA-256 of text, arch and driver version separated by NUL", () => {
    const want = createHash("sha256").update(".version 8.0\u0000sm_90\u000013000").digest("hex");
    expect(ptxCacheKey(".version 8.0", "sm_90", 13000)).toBe(want);
  });
  it("changes with the text, the arch and the driver", () => {
    const keys = new Set([
      ptxCacheKey("a", "sm_90", 1),
      ptxCacheKey("b", "sm_90", 1),
      ptxCacheKey("a", "sm_80", 1),
      ptxCacheKey("a", "sm_90", 2),
    ]);
    expect(keys.size).toBe(4);
  });
});
