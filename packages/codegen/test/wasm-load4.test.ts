// `load4` and the vec4<i32/u32> bit, shift and cast ops it feeds (decision 0302): the Wasm lowering (SIMD128) agrees
// bit for bit with the kernel-dsl interpreter on edge-case inputs; every other target refuses with missing-capability.

import { describe, expect, test } from "vitest";
import { CodegenError, lowerAmdgpu, lowerPtx, lowerSpirv, lowerWasm, lowerWgsl } from "@poot/codegen";
import { interpret, kernel } from "@poot/kernel-dsl";
import type { Kernel, KernelBuffer } from "@poot/kernel-dsl";
import { AMD_CAPS, CUDA_CAPS, VULKAN_CAPS, WASM_CAPS, WEBGPU_CAPS } from "./helpers.js";
import { runWasm } from "./wasm-runner.js";

const N = 8; // threads; thread t reads elements 4t+1 .. 4t+4 (unaligned on purpose)

/** Every widening of load4, then lane-wise and/or/xor/not, shifts by a splat and by a per-lane count, and casts. */
const k = kernel("load4_ops", { workgroupSize: [N, 1, 1] }, (b) => {
  const { lid, let_, vec, u32, f32, buffer } = b;
  const bytes = buffer("bytes", "u8", "read");
  const sbytes = buffer("sbytes", "i8", "read");
  const halves = buffer("halves", "f16", "read");
  const bhalves = buffer("bhalves", "bf16", "read");
  const floats = buffer("floats", "f32", "read");
  const words = buffer("words", "u32", "read");
  const oi = buffer("oi", "vec4<i32>", "write");
  const ou = buffer("ou", "vec4<u32>", "write");
  const of = buffer("of", "vec4<f32>", "write");
  const at = let_(lid.x.mul(4).add(1), "at");
  const o = let_(lid.x.mul(6), "o");
  const si = bytes.at4(at, "vec4<i32>");
  const zu = bytes.at4(at, "vec4<u32>");
  oi.set(o, si);
  ou.set(o, zu);
  ou.set(o.add(1), sbytes.at4(at, "vec4<u32>"));
  of.set(o, halves.at4(at, "vec4<f32>"));
  of.set(o.add(1), bhalves.at4(at, "vec4<f32>"));
  of.set(o.add(2), floats.at4(at, "vec4<f32>").mul(si.cast("vec4<f32>")));
  const w = words.at4(at, "vec4<u32>");
  const four = let_(u32(4), "four");
  const nib = let_(
    w.shr(vec("vec4<u32>", four, four, four, four)).and(vec("vec4<u32>", u32(15), u32(15), u32(15), u32(15))),
    "nib",
  );
  ou.set(o.add(2), nib.or(zu.shl(vec("vec4<u32>", u32(1), u32(9), u32(31), u32(33)))));
  ou.set(o.add(3), w.xor(zu).not());
  oi.set(o.add(1), si.shr(vec("vec4<i32>", b.i32(1), b.i32(3), b.i32(7), b.i32(35))));
  oi.set(o.add(2), floats.at4(at, "vec4<f32>").cast("vec4<i32>"));
  ou.set(o.add(4), floats.at4(at, "vec4<f32>").cast("vec4<u32>"));
  of.set(o.add(3), w.cast("vec4<f32>"));
  of.set(o.add(4), nib.cast("vec4<f32>").mul(vec("vec4<f32>", f32(0.5), f32(0.5), f32(0.5), f32(0.5))));
});

/** Inputs with the edge cases spread over the lanes: sign bits, f16 subnormals/inf/NaN, huge floats, u32 ≥ 2^31. */
function inputs(seed: number): Record<string, KernelBuffer> {
  let s = seed >>> 0;
  const next = (): number => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0), s);
  const len = 4 * N + 1;
  const halfSpecials = [0x0000, 0x8000, 0x0001, 0x83ff, 0x3c00, 0x7bff, 0x7c00, 0xfc00, 0x7e01, 0x0400];
  const floatSpecials = [0, -0, 1.5, -2.5, 3e9, -3e9, 5e9, NaN, 2 ** 31, -(2 ** 31) - 256, 0.99];
  return {
    bytes: Uint8Array.from({ length: len }, () => next() & 0xff),
    sbytes: Int8Array.from({ length: len }, () => (next() & 0xff) - 128),
    halves: Uint16Array.from({ length: len }, (_, i) =>
      i % 3 === 0 ? halfSpecials[(next() >>> 8) % halfSpecials.length]! : next() & 0xffff,
    ),
    bhalves: Uint16Array.from({ length: len }, () => next() & 0xffff),
    floats: Float32Array.from({ length: len }, (_, i) =>
      i % 2 === 0 ? floatSpecials[(next() >>> 8) % floatSpecials.length]! : ((next() & 0xffff) - 32768) / 64,
    ),
    words: Uint32Array.from({ length: len }, () => next()),
    oi: new Int32Array(4 * 6 * N),
    ou: new Uint32Array(4 * 6 * N),
    of: new Float32Array(4 * 6 * N),
  };
}

/** The 32-bit patterns of a buffer; f32 NaNs as one pattern (the IR leaves NaN payloads and signs unspecified). */
const bits = (b: KernelBuffer): number[] =>
  Array.from(new Uint32Array(b.buffer, b.byteOffset, b.byteLength / 4), (x, i) =>
    b instanceof Float32Array && Number.isNaN(b[i]) ? 0x7fc00000 : x,
  );

describe("load4 on the Wasm target", () => {
  test("matches the interpreter bit for bit (every element type, bit ops, shifts, casts)", () => {
    const code = lowerWasm(k, WASM_CAPS);
    for (const seed of [1, 2, 3, 4]) {
      const ref = inputs(seed),
        got = inputs(seed);
      interpret(k, { grid: [1], buffers: ref, subgroupSize: 1 });
      runWasm(code, { grid: [1, 1, 1], buffers: got, uniforms: {}, uniformTypes: {} });
      for (const name of ["oi", "ou", "of"])
        expect(bits(got[name]!), `${name}, seed ${seed}`).toEqual(bits(ref[name]!));
    }
  });

  test("every other target refuses a kernel with load4 (missing-capability)", () => {
    const lowerings: [string, (x: Kernel) => unknown][] = [
      ["wgsl", (x) => lowerWgsl(x, WEBGPU_CAPS)],
      ["ptx", (x) => lowerPtx(x, CUDA_CAPS)],
      ["spirv", (x) => lowerSpirv(x, VULKAN_CAPS)],
      ["amdgpu", (x) => lowerAmdgpu(x, AMD_CAPS)],
    ];
    for (const [target, lower] of lowerings) {
      let err: unknown;
      try {
        lower(k);
      } catch (e) {
        err = e;
      }
      expect(err, target).toBeInstanceOf(CodegenError);
      expect((err as CodegenError).code, target).toBe("missing-capability");
    }
  });
});
