// The x86-64 target: every test kernel it can express lowers and links into a shared object with LLVM 19 (one library,
// so the library's own entry points are checked too); kernels with barriers or workgroup memory (or the grid size,
// which the native ABI does not pass) are refused with a typed error; a malformed module fails. Numbers are checked where the kernels run (@poot/backend-cpu's native tests).

import { describe, expect, test } from "vitest";
import { assembleX86, CodegenError, lowerX86, x86Library, type ValidationResult } from "@poot/codegen";
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
