// The x86-64 target: every test kernel it can express lowers and links into a shared object with LLVM 19 (one library,
// so the library's own entry points are checked too); kernels with barriers or workgroup memory (or the grid size,
// which the native ABI does not pass) are refused with a typed error; a malformed module fails. Numbers are checked where the kernels run (@poot/backend-cpu's native tests).

import { describe, expect, test } from "vitest";
import {
  arm64Library,
  assembleX86,
  CodegenError,
  lowerPtx,
  lowerWasm,
  lowerWgsl,
  lowerX86,
  x86Library,
  type ValidationResult,
} from "@poot/codegen";
import { kernel } from "@poot/kernel-dsl";
import { walkStmts } from "../src/common/prepare.js";
import { COVERAGE_KERNELS } from "./coverage-kernels.js";
import { WASM_CAPS } from "./helpers.js";
import { ALL_KERNELS as MAIN_KERNELS } from "./kernels.js";

const ALL = [...MAIN_KERNELS, ...COVERAGE_KERNELS];
const missing = await assembleX86("").then((r) => (r.status === "unavailable" ? r.reason : undefined));

/** Whether a kernel needs what one thread running its workgroup in a loop cannot give: barriers, workgroup memory. */
function serialOnly(k: (typeof ALL)[number]): boolean {
  let barrier = false;
  walkStmts(k.body, (s) => {
    if (s.s === "barrier") barrier = true;
  });
  return !barrier && k.shared.length === 0;
}

const lowers = (k: (typeof ALL)[number]): boolean => {
  try {
    lowerX86(k, WASM_CAPS);
    return true;
  } catch (e) {
    if (e instanceof CodegenError) return false;
    throw e;
  }
};
const expressible = ALL.filter(lowers);
const refused = ALL.filter((k) => !serialOnly(k));

function expectOk(r: ValidationResult): void {
  expect(r.status === "invalid" ? r.message : r.status).toBe("ok");
}

describe("the x86 target", () => {
  test("lowers kernels to one function of the native ABI each", () => {
    expect(expressible.length).toBeGreaterThan(3);
    for (const k of expressible) {
      const code = lowerX86(k, WASM_CAPS);
      expect(code.target).toBe("x86");
      expect(code.text).toContain(`define void @${k.name}(i64 %base, i32 %args, i32 %group) #0 {`);
    }
  });

  test("refuses barriers and workgroup memory with a typed error", () => {
    expect(refused.length).toBeGreaterThan(0);
    for (const k of refused) expect(() => lowerX86(k, WASM_CAPS)).toThrow(CodegenError);
  });

  test.skipIf(missing !== undefined)(
    `links them into one shared object${missing ? ` (skipped: ${missing})` : ""}`,
    async () => {
      const codes = expressible.map((k) => lowerX86(k, WASM_CAPS));
      const r = await assembleX86(x86Library(codes, "test"));
      expectOk(r);
      expect(r.status === "ok" && r.artifact!.subarray(0, 4)).toEqual(new Uint8Array([0x7f, 0x45, 0x4c, 0x46]));
    },
  );

  test.skipIf(missing !== undefined)("planted: a malformed module is invalid", async () => {
    const code = lowerX86(expressible[0]!, WASM_CAPS);
    const broken = { target: "x86" as const, text: code.text!.replace("ret void", "ret i32 0") };
    expect((await assembleX86(x86Library([broken], "test"))).status).toBe("invalid");
  });
});

describe("the 8-bit integer dot product (dot4U8I8, packed load4; decision 2320)", () => {
  const dot = kernel("dot_u8i8", { workgroupSize: [1, 1, 1] }, (b) => {
    const a = b.buffer("a", "u8", "read");
    const w = b.buffer("w", "i8", "read");
    const o = b.buffer("o", "i32", "write");
    const zero = b.vec("vec4<i32>", b.i32(0), b.i32(0), b.i32(0), b.i32(0));
    o.set(0, b.dot4U8I8(zero, a.at16x8(0), w.at16x8(0)).x);
  });

  test("x86 lowers it to vpdpbusd, and the library compiles that kernel for AVX-512 VNNI", () => {
    const code = lowerX86(dot, WASM_CAPS);
    expect(code.text).toContain("@llvm.x86.avx512.vpdpbusd.128");
    expect(code.text).toContain("load <4 x i32>");
    const lib = x86Library([code], "h");
    expect(lib).toMatch(/define void @dot_u8i8\(.*\) #3 \{/);
    expect(lib).toContain('"target-features"="+avx512vnni"');
    expect(lib).toContain("define i32 @poot_native_vnni()");
    // Linked once beside wide kernel sets, it keeps its own symbol (no AVX2/AVX-512 dispatch).
    expect(x86Library([], "h", [], [code])).toMatch(/define void @dot_u8i8\(.*\) #3 \{/);
    // The arm64 library cannot hold it: refused in one line, not linked.
    expect(() => arm64Library([code], "h")).toThrow(/dot_u8i8 uses an x86 intrinsic/);
  });

  test("vec8/vec16 operands lower to the 256/512-bit vpdpbusd and one 32/64-byte load (decision 2330)", () => {
    const wide = (lanes: 8 | 16) =>
      kernel(`dot_u8i8_${lanes}`, { workgroupSize: [1, 1, 1] }, (b) => {
        const a = b.buffer("a", "u8", "read");
        const w = b.buffer("w", "i8", "read");
        const o = b.buffer("o", "i32", "write");
        const t = lanes === 8 ? "vec8<i32>" : "vec16<i32>";
        const zero = b.vec(t, ...Array.from({ length: lanes }, () => b.i32(0))) as never;
        const [x, y] = lanes === 8 ? [a.at32x8(0), w.at32x8(0)] : [a.at64x8(0), w.at64x8(0)];
        o.set(0, b.let_(b.dot4U8I8(zero, x as never, y as never), "d").lane(lanes - 1) as never);
      });
    const code8 = lowerX86(wide(8), { ...WASM_CAPS, vectorLanes: 16 });
    expect(code8.text).toContain("@llvm.x86.avx512.vpdpbusd.256(<8 x i32>");
    expect(code8.text).toContain("load <8 x i32>");
    const code16 = lowerX86(wide(16), { ...WASM_CAPS, vectorLanes: 16 });
    expect(code16.text).toContain("@llvm.x86.avx512.vpdpbusd.512(<16 x i32>");
    expect(code16.text).toContain("load <16 x i32>");
    // Planted: caps without 16 lanes refuse the vec16 kernel.
    expect(() => lowerX86(wide(16), { ...WASM_CAPS, vectorLanes: 8 })).toThrow(/16-lane vectors/);
  });

  test("targets without an integer dot product refuse it with missing-capability", () => {
    const lowerings = { wgsl: lowerWgsl, wasm: lowerWasm, ptx: lowerPtx } as const;
    for (const [target, lower] of Object.entries(lowerings)) {
      let err: unknown;
      try {
        lower(dot, WASM_CAPS);
      } catch (e) {
        err = e;
      }
      expect(err, target).toBeInstanceOf(CodegenError);
      expect((err as CodegenError).code, target).toBe("missing-capability");
      expect((err as Error).message, target).toMatch(/8-bit integer dot product/);
    }
  });
});
