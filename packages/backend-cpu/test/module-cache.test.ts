// Kernels of the same code share one compiled module (decision 1670): binaries that differ only in their entry's
// export name and custom sections get the first one's module and export; any other difference gets a module of its
// own. The modules are written by hand here (one function returning a constant), so the bytes are known exactly.
import { describe, expect, test } from "vitest";
import { WA } from "../src/memory.js";
import { canonicalKernel, ModuleCache } from "../src/module-cache.js";

const utf8 = (s: string) => [...new TextEncoder().encode(s)];
const section = (id: number, payload: number[]) => [id, payload.length, ...payload];

/** A module exporting `entry` (and `extra`, when given) as a function returning `value`; `custom` adds a custom section. */
function kernel(entry: string, value: number, custom?: string, extra?: string): Uint8Array {
  const exports = [entry, ...(extra === undefined ? [] : [extra])];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 0, 1, 0x7f]),
    ...section(3, [1, 0]),
    ...section(7, [exports.length, ...exports.flatMap((e) => [e.length, ...utf8(e), 0, 0])]),
    ...section(10, [1, 4, 0, 0x41, value, 0x0b]),
    ...(custom === undefined ? [] : section(0, [4, ...utf8("name"), ...utf8(custom)])),
  ]);
}

function call(shared: { module: object; entry: string }): number {
  const inst = new WA.Instance(shared.module, {});
  return (inst.exports[shared.entry] as () => number)();
}

describe("ModuleCache", () => {
  test("kernels that differ only in the entry's name and custom sections share the first one's module", () => {
    const cache = new ModuleCache();
    const a = cache.get(kernel("prefill_4_p16_fused", 7, "p16"), "prefill_4_p16_fused");
    const b = cache.get(kernel("prefill_4_p112_fused", 7, "p112, another name"), "prefill_4_p112_fused");
    const c = cache.get(kernel("decode_p3", 7), "decode_p3");
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(b.entry).toBe("prefill_4_p16_fused");
    expect(call(b)).toBe(7);
    expect(cache.counts).toEqual({ compiled: 1, shared: 2 });
  });

  test("any other difference gets its own module: the code, another export's name", () => {
    const cache = new ModuleCache();
    const a = cache.get(kernel("k1", 7), "k1");
    const other = cache.get(kernel("k2", 9), "k2");
    expect(other).not.toBe(a);
    expect(call(other)).toBe(9);
    const extra = cache.get(kernel("k3", 7, undefined, "helper"), "k3");
    expect(extra).not.toBe(a);
    expect(cache.get(kernel("k4", 7, undefined, "helper2"), "k4")).not.toBe(extra);
    expect(cache.counts).toEqual({ compiled: 4, shared: 0 });
  });

  test("a binary that does not parse, or does not export its entry, is compiled on its own (and errors as before)", () => {
    expect(canonicalKernel(kernel("k", 7), "k")).not.toBeNull();
    expect(canonicalKernel(kernel("k", 7), "missing")).toBeNull();
    expect(canonicalKernel(kernel("k", 7).subarray(0, 20), "k")).toBeNull();
    const cache = new ModuleCache();
    const m = cache.get(kernel("k", 7), "missing");
    expect(cache.get(kernel("k", 7), "missing")).not.toBe(m);
    expect(() => cache.get(kernel("k", 7).subarray(0, 20), "k")).toThrow();
  });
});
