// Launch parameter blocks: each argument in its own 8-byte native cell, the pointer array pointing at the
// cells, values encoded as the PTX .param types expect (checked against hand-written bit patterns).
import koffi from "koffi";
import { describe, expect, it } from "vitest";
import { CudaError } from "./errors.js";
import { LaunchParams } from "./launch.js";

/** Reads `n` little-endian u64 from native memory `p`. */
function u64s(p: unknown, n: number): bigint[] {
  const v = new DataView(koffi.view(p, 8 * n));
  return Array.from({ length: n }, (_, i) => v.getBigUint64(i * 8, true));
}

describe("LaunchParams", () => {
  it("points kernelParams[i] at an 8-byte cell holding argument i", () => {
    const p = new LaunchParams([
      { kind: "ptr", value: 0x7f12_3456_7890n },
      { kind: "u32", value: 0xdeadbeef },
      { kind: "i32", value: -2 },
      { kind: "f32", value: 1.5 },
    ]);
    const ptrs = u64s(p.handle, 4);
    // Consecutive cells, 8 bytes apart.
    expect(ptrs.map((a) => a - ptrs[0]!)).toEqual([0n, 8n, 16n, 24n]);
    // The pointer array points at the native cell block (a private field, read here through element access).
    const block = p["cellsHandle"];
    expect(ptrs[0]).toBe(koffi.address(block));
    const cells = u64s(block, 4);
    // 1.5f is 0x3fc00000; -2 as i32 is 0xfffffffe; the upper halves of 4-byte cells stay zero.
    expect(cells).toEqual([0x7f12_3456_7890n, 0xdeadbeefn, 0xfffffffen, 0x3fc00000n]);
    p.set(1, { kind: "u32", value: 7 });
    expect(u64s(block, 2)[1]).toBe(7n);
    p.dispose();
    expect(() => p.handle).toThrow(CudaError);
  });

  it("refuses values that do not fit their parameter type", () => {
    const bad: [string, number][] = [
      ["u32", -1],
      ["u32", 2 ** 32],
      ["i32", 2 ** 31],
      ["u32", 0.5],
    ];
    for (const [kind, value] of bad) {
      expect(() => new LaunchParams([{ kind: kind as "u32", value }]), `${kind} ${value}`).toThrow(/is not an? [iu]32/);
    }
    const p = new LaunchParams([{ kind: "u32", value: 1 }]);
    expect(() => p.set(1, { kind: "u32", value: 1 })).toThrow(/out of range/);
    p.dispose();
  });
});
