// The committed native kernel library is the kernel IR's: regenerating it (kernelgen's GEMVs, codegen's x86 target,
// opt + llc + ld.lld of LLVM 19) gives the committed object byte for byte, and a planted change in any kernel's IR
// makes the check fail. Without LLVM 19 the byte check is skipped, or fails under CI.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { assembleX86 } from "@poot/codegen";
import { isCI } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import { loadNodeNative, prebuiltPath } from "../src/native/node-library.js";
// @ts-expect-error: a plain ES module of the package's build (no declarations).
import { NATIVE_LIBRARIES, nativeLibraryIR } from "../native/library.mjs";

const { ir, hash } = nativeLibraryIR() as { ir: string; hash: string };
const committed = (): Uint8Array => readFileSync(prebuiltPath("linux", "x64")!);
const path = fileURLToPath(new URL(`../native/prebuilt/linux-x64/${NATIVE_LIBRARIES["linux-x64"]}`, import.meta.url));

/** Where `ir` compiles to other bytes than the committed object: a message, or null when they are equal. */
async function differs(source: string): Promise<string | null> {
  const r = await assembleX86(source);
  if (r.status === "unavailable") {
    if (isCI()) throw new Error(`LLVM 19 is needed to regenerate ${path}: ${r.reason}`);
    return "unavailable";
  }
  if (r.status !== "ok") return `${r.tool}: ${r.message}`;
  const want = committed();
  if (Buffer.compare(Buffer.from(r.artifact!), Buffer.from(want)) === 0) return null;
  return `regenerated ${r.artifact!.length} bytes differ from the committed ${want.length} (pnpm --filter @poot/backend-cpu build:native)`;
}

describe("the native kernel library", () => {
  test("the committed object embeds the hash of the kernel IR it was built from", () => {
    expect(prebuiltPath("linux", "x64")).toBe(path);
    expect(Buffer.from(committed()).includes(hash), `the object was built from other kernels than ${hash}`).toBe(true);
    const lib = process.platform === "linux" && process.arch === "x64" ? loadNodeNative() : null;
    if (lib !== null) {
      expect(lib.sourceHash).toBe(hash);
      expect([...lib.kernels]).toContain("poot_gemv_q4_k_add");
    }
  });

  test("other platforms have no object (the executor then runs the Wasm kernels)", () => {
    expect(prebuiltPath("darwin", "arm64")).toBeNull();
    expect(prebuiltPath("linux", "arm64")).toBeNull();
  });

  test("regenerating it from the kernel IR gives the committed bytes; a planted kernel change does not", async () => {
    const same = await differs(ir);
    if (same === "unavailable") return;
    expect(same).toBeNull();
    // Planted: one product of the Q8_0 GEMV made a sum, in the IR only (the embedded hash unchanged).
    const at = ir.indexOf("fmul <16 x float>", ir.indexOf("define internal void @poot_gemv_q8_0_none.avx512("));
    const planted = `${ir.slice(0, at)}fadd${ir.slice(at + 4)}`;
    expect(await differs(planted)).toMatch(/differ from the committed/);
  });
});
