import { describe, expect, test } from "vitest";
import { wasmApi } from "./api.js";
import { Atomic, Simd, W, WasmCode } from "./code.js";
import { ValType, WasmModule } from "./module.js";

describe("WasmModule", () => {
  test("the smallest module with an exported function has the spec's bytes", () => {
    // (module (func (export "f"))), assembled by hand from the binary format chapter.
    const m = new WasmModule();
    m.exportFunc("f", m.func([], [], new WasmCode(0)));
    expect([...m.encode()]).toEqual([
      0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x07,
      0x05, 0x01, 0x01, 0x66, 0x00, 0x00, 0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b,
    ]);
  });

  test("SIMD128 and atomics over an imported shared memory run in the engine", () => {
    const m = new WasmModule();
    m.importMemory({ module: "env", name: "memory", minimum: 1, maximum: 4, shared: true });
    // addv(dst, a, b): dst[0..4] = a[0..4] + b[0..4] (f32x4); count(p) = atomic p[0] += 5, returns the old value.
    const add = new WasmCode(3);
    add
      .opU(W.local_get, 0)
      .opU(W.local_get, 1)
      .simdMem(Simd.v128_load, 4)
      .opU(W.local_get, 2)
      .simdMem(Simd.v128_load, 4)
      .simd(Simd.f32x4_add)
      .simdMem(Simd.v128_store, 4);
    const count = new WasmCode(1);
    count.opU(W.local_get, 0).i32(5).atomic(Atomic.i32_rmw_add, 2);
    m.exportFunc("addv", m.func([ValType.i32, ValType.i32, ValType.i32], [], add));
    m.exportFunc("count", m.func([ValType.i32], [ValType.i32], count));
    const bin = m.encode();
    expect(wasmApi.validate(bin)).toBe(true);
    const memory = new wasmApi.Memory({ initial: 1, maximum: 4, shared: true });
    const inst = new wasmApi.Instance(new wasmApi.Module(bin), { env: { memory } });
    const f32 = new Float32Array(memory.buffer);
    f32.set([1.5, -2, 3.25, 1e30], 4);
    f32.set([0.5, 2, -3.25, 1e30], 8);
    (inst.exports["addv"] as (d: number, a: number, b: number) => void)(0, 16, 32);
    expect(Array.from(f32.subarray(0, 4))).toEqual([2, 0, 0, Math.fround(2e30)]);
    const i32 = new Int32Array(memory.buffer);
    i32[16] = 7;
    expect((inst.exports["count"] as (p: number) => number)(64)).toBe(7);
    expect(i32[16]).toBe(12);
  });
});
