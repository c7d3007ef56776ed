// kernelHash against the published FNV-1a 64-bit test vectors (ASCII input: one code unit per byte).

import { describe, expect, it } from "vitest";
import { kernelHash } from "./pipelines.js";

describe("kernelHash", () => {
  it("equals FNV-1a 64 on the reference vectors", () => {
    expect(kernelHash("")).toBe("cbf29ce484222325");
    expect(kernelHash("a")).toBe("af63dc4c8601ec8c");
    expect(kernelHash("foobar")).toBe("85944171f73967e8");
  });

  it("tells WGSL texts apart that differ in one character", () => {
    expect(kernelHash("main\nvar<storage, read> x: array<f32>;")).not.toBe(
      kernelHash("main\nvar<storage, read_write> x: array<f32>;"),
    );
  });
});
