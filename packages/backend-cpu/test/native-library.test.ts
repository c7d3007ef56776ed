// The committed native kernel libraries are the kernel IR's: regenerating each (kernelgen's GEMVs, codegen's x86
// target, opt + llc + ld.lld of LLVM 19; linux-x64 with its AVX2 and AVX-512 sets, linux-arm64 with NEON) gives the
// committed object byte for byte, and a planted change in any kernel's IR makes the check fail. Without LLVM 19 the
// byte check is skipped, or fails under CI. The arm64 object is only built and linked here (no arm64 machine runs it).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ValidationResult } from "@poot/codegen";
import { isCI } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import { loadNodeNative, prebuiltPath } from "../src/native/node-library.js";
// @ts-expect-error: a plain ES module of the package's build (no declarations).
import { NATIVE_ASSEMBLE, NATIVE_LIBRARIES, nativeLibraryIR } from "../native/library.mjs";

type Platform = "linux-x64" | "linux-arm64";
const libraryIR = nativeLibraryIR as (platform: Platform) => { ir: string; hash: string };
const assemble = NATIVE_ASSEMBLE as Record<Platform, (ir: string) => Promise<ValidationResult>>;
const files = NATIVE_LIBRARIES as Record<Platform, string>;
const pathOf = (p: Platform): string => fileURLToPath(new URL(`../native/prebuilt/${p}/${files[p]}`, import.meta.url));

/** Where `ir` compiles to other bytes than `platform`'s committed object: a message, or null when they are equal. */
async function differs(platform: Platform, source: string): Promise<string | null> {
  const r = await assemble[platform](source);
  if (r.status === "unavailable") {
    if (isCI()) throw new Error(`LLVM 19 is needed to regenerate ${pathOf(platform)}: ${r.reason}`);
    return "unavailable";
  }
  if (r.status !== "ok") return `${r.tool}: ${r.message}`;
  const want = readFileSync(pathOf(platform));
  if (Buffer.compare(Buffer.from(r.artifact!), want) === 0) return null;
  return `regenerated ${r.artifact!.length} bytes differ from the committed ${want.length} (pnpm --filter @poot/backend-cpu build:native)`;
}

/** Per platform: where a planted change goes (one product of the Q8_0 GEMV made a sum, in the IR only). */
const PLANT: Record<Platform, readonly [string, string]> = {
  "linux-x64": ["define internal void @poot_gemv_q8_0_none.avx512(", "fmul <16 x float>"],
  "linux-arm64": ["define void @poot_gemv_q8_0_none(", "fmul <4 x float>"],
};

describe("the native kernel libraries", () => {
  test("the committed objects embed the hash of the kernel IR they were built from", () => {
    expect(prebuiltPath("linux", "x64")).toBe(pathOf("linux-x64"));
    expect(prebuiltPath("linux", "arm64")).toBe(pathOf("linux-arm64"));
    for (const p of ["linux-x64", "linux-arm64"] as const) {
      const { hash } = libraryIR(p);
      expect(readFileSync(pathOf(p)).includes(hash), `${p} was built from other kernels than ${hash}`).toBe(true);
    }
    const lib = process.platform === "linux" && process.arch === "x64" ? loadNodeNative() : null;
    if (lib !== null) {
      expect(lib.sourceHash).toBe(libraryIR("linux-x64").hash);
      expect([...lib.kernels]).toContain("poot_gemv_q4_k_add");
    }
  });

  test("other platforms have no object (the executor then runs the Wasm kernels)", () => {
    expect(prebuiltPath("darwin", "arm64")).toBeNull();
    expect(prebuiltPath("win32", "x64")).toBeNull();
  });

  for (const p of ["linux-x64", "linux-arm64"] as const)
    test(`${p}: regenerating it from the kernel IR gives the committed bytes; a planted kernel change does not`, async () => {
      const { ir } = libraryIR(p);
      const same = await differs(p, ir);
      if (same === "unavailable") return;
      expect(same).toBeNull();
      const [fn, op] = PLANT[p];
      const at = ir.indexOf(op, ir.indexOf(fn));
      expect(at).toBeGreaterThan(ir.indexOf(fn));
      const planted = `${ir.slice(0, at)}fadd${ir.slice(at + 4)}`;
      expect(await differs(p, planted)).toMatch(/differ from the committed/);
      // Two full builds of the library (opt + llc + ld.lld): minutes on a loaded 2-core machine, past 10 with the
      // k-quant slab GEMMs (decision 2430) while others build; opt alone took 6 min of one build under load.
    }, 2_400_000);

  test("linux-x64 links the fast kernels as AVX-512 VNNI code (decision 2320) with an AVX2 fallback each (decision 2335), the quantizers once; linux-arm64 has none", () => {
    const x86 = libraryIR("linux-x64").ir;
    const arm = libraryIR("linux-arm64").ir;
    for (const k of [
      "poot_quant_q8_0",
      "poot_quant_q8_k",
      "poot_gemv_q8_0_fast_none",
      "poot_gemv_q4_k_fast_heads2",
      "poot_gemv_q6_k_fast_add",
    ]) {
      expect(x86).toContain(`define void @${k}(`);
      expect(arm).not.toContain(`@${k}(`);
    }
    // The symbol dispatches: the VNNI kernel (attributes #3) or its widened AVX2 fallback (#0, x86-64-v3, no vpdpbusd).
    expect(x86).toMatch(/define void @poot_gemv_q8_0_fast_add\(.*\) #1 \{\n.*@poot\.level\.now/);
    expect(x86).toMatch(/define internal void @poot_gemv_q8_0_fast_add\.vnni\(.*\) #3 \{/);
    const avx2 = /define internal void @poot_gemv_q6_k_fast_none\.avx2\(.*\) #0 \{\n[^]*?\n\}/.exec(x86)?.[0] ?? "";
    expect(avx2).toContain("mul <32 x i32>");
    expect(avx2).not.toContain("vpdpbusd");
    expect(x86).not.toContain("@poot_quant_q8_k.avx2(");
    expect(x86).toMatch(/attributes #3 = .*"\+avx512vnni"/);
    expect(arm).toContain("define i32 @poot_native_vnni() #0 {\n  ret i32 0");
  });
});
