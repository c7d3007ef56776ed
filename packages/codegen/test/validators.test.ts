// Every test kernel, lowered for every target, passes that target's own validator; a planted malformed
// artifact fails each validator. Tests skip (saying why) only when a tool is not installed.

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  assembleAmdgpu,
  assembleAmdgpuMany,
  lowerAmdgpu,
  lowerPtx,
  lowerSpirv,
  lowerWasm,
  lowerWgsl,
  openDawnDevice,
  SpirvModule,
  validatePtx,
  validateSpirv,
  validateWasm,
  validateWgsl,
  type DawnDevice,
  type ValidationResult,
} from "@poot/codegen";
import { kernel } from "@poot/kernel-dsl";
import { ALL_KERNELS as MAIN_KERNELS } from "./kernels.js";
import { COVERAGE_KERNELS } from "./coverage-kernels.js";

const ALL_KERNELS = [...MAIN_KERNELS, ...COVERAGE_KERNELS];
import { AMD_CAPS, CUDA_CAPS, lavapipeIcd, VULKAN_CAPS, WASM_CAPS, WEBGPU_CAPS } from "./helpers.js";

/** Probes a validator once with a trivial input to learn whether it is installed. */
async function availability(probe: () => Promise<ValidationResult>): Promise<string | undefined> {
  const r = await probe();
  return r.status === "unavailable" ? r.reason : undefined;
}

const ptxMissing = await availability(() => validatePtx("", { arch: "sm_90" }));
const spirvMissing = await availability(() => validateSpirv(new Uint8Array(0)));
const llcMissing = await availability(() => assembleAmdgpu("", { mcpu: "gfx90a" }));

function expectOk(r: ValidationResult): void {
  // Show the validator's message on failure.
  expect(r.status === "invalid" ? r.message : r.status).toBe("ok");
}

describe("ptxas", () => {
  for (const k of ALL_KERNELS) {
    for (const arch of ["sm_80", "sm_90"]) {
      test.skipIf(ptxMissing !== undefined)(
        `${k.name} assembles for ${arch}${ptxMissing ? ` (skipped: ${ptxMissing})` : ""}`,
        async () => {
          expectOk(await validatePtx(lowerPtx(k, CUDA_CAPS).text!, { arch }));
        },
      );
    }
  }
  test.skipIf(ptxMissing !== undefined)(
    "without caps.bf16, bf16 rounding uses integer ops and still assembles",
    async () => {
      for (const k of ALL_KERNELS.filter((x) => x.name === "bf16_scale")) {
        const text = lowerPtx(k, { ...CUDA_CAPS, bf16: false }).text!;
        expect(text).not.toMatch(/cvt\.rn\.bf16/);
        expectOk(await validatePtx(text, { arch: "sm_80" }));
      }
    },
  );
  test.skipIf(ptxMissing !== undefined)("a planted malformed kernel (undeclared register) fails", async () => {
    const text = lowerPtx(ALL_KERNELS[0]!, CUDA_CAPS).text!.replace(/^\s*\.reg \.f32 .*$/m, "");
    const r = await validatePtx(text, { arch: "sm_90" });
    expect(r.status).toBe("invalid");
    expect(r.status === "invalid" && r.message).toMatch(/%f\d+/);
  });
});

describe("spirv-val --target-env vulkan1.1", () => {
  for (const k of ALL_KERNELS) {
    test.skipIf(spirvMissing !== undefined)(
      `${k.name} validates${spirvMissing ? ` (skipped: ${spirvMissing})` : ""}`,
      async () => {
        expectOk(await validateSpirv(lowerSpirv(k, VULKAN_CAPS).binary!));
      },
    );
  }
  test.skipIf(spirvMissing !== undefined)("a planted malformed module (integer add of floats) fails", async () => {
    const m = new SpirvModule();
    m.capability(1);
    const v = m.typeVoid();
    const fn = m.function(v, m.typeFunction(v));
    const f = m.typeFloat(32);
    fn.op(128 /* OpIAdd */, f, m.f32(1), m.f32(2));
    fn.end();
    m.entryPoint(5, fn.id, "bad", []);
    m.executionMode(fn.id, 17, 1, 1, 1);
    const r = await validateSpirv(m.bytes());
    expect(r.status).toBe("invalid");
    expect(r.status === "invalid" && r.message).toMatch(/IAdd/);
  });
});

describe("llc + ld.lld (AMDGPU code objects)", () => {
  for (const k of ALL_KERNELS) {
    for (const mcpu of ["gfx90a", "gfx942", "gfx1100"]) {
      test.skipIf(llcMissing !== undefined)(
        `${k.name} builds a .hsaco for ${mcpu}${llcMissing ? ` (skipped: ${llcMissing})` : ""}`,
        async () => {
          const r = await assembleAmdgpu(lowerAmdgpu(k, AMD_CAPS).text!, { mcpu });
          expectOk(r);
          // An ELF shared object for the AMDGPU machine (EM_AMDGPU = 224).
          const elf = r.status === "ok" ? r.artifact! : new Uint8Array();
          expect([...elf.subarray(0, 4)]).toEqual([0x7f, 0x45, 0x4c, 0x46]);
          expect(elf[18]! | (elf[19]! << 8)).toBe(224);
        },
      );
    }
  }
  test.skipIf(llcMissing !== undefined)("a planted malformed kernel (undefined value) fails", async () => {
    const text = lowerAmdgpu(ALL_KERNELS[0]!, AMD_CAPS).text!.replace(
      "ret void",
      "store i32 %undefined_value, ptr addrspace(1) null, align 4\n  ret void",
    );
    const r = await assembleAmdgpu(text, { mcpu: "gfx942" });
    expect(r.status).toBe("invalid");
    expect(r.status === "invalid" && r.message).toMatch(/undefined_value/);
  });
  test.skipIf(llcMissing !== undefined)(
    "batched: every kernel passes in one link, a planted bad one is named alone, a repeated name splits the batch",
    async () => {
      const good = ALL_KERNELS.map((k) => lowerAmdgpu(k, AMD_CAPS).text!);
      const bad = good[0]!.replace(
        "ret void",
        "store i32 %undefined_value, ptr addrspace(1) null, align 4\n  ret void",
      );
      const irs = [...good, bad, good[1]!];
      const rs = await assembleAmdgpuMany(irs, { mcpu: "gfx942" });
      expect(rs.map((r) => r.status)).toEqual([...good.map(() => "ok"), "invalid", "ok"]);
      const r = rs[good.length]!;
      expect(r.status === "invalid" && r.message).toMatch(/undefined_value/);
    },
  );
});

describe("WebAssembly.validate", () => {
  for (const k of ALL_KERNELS) {
    test(`${k.name} validates`, () => expectOk(validateWasm(lowerWasm(k, WASM_CAPS).binary!)));
  }
  test("a planted malformed module (truncated code section) fails", () => {
    const bin = lowerWasm(ALL_KERNELS[0]!, WASM_CAPS).binary!;
    const r = validateWasm(bin.subarray(0, bin.length - 3));
    expect(r.status).toBe("invalid");
    expect(r.status === "invalid" && r.message.length).toBeGreaterThan(0);
  });
});

describe("Tint (Dawn on lavapipe)", () => {
  let dawn: DawnDevice | undefined;
  let why = "";
  beforeAll(async () => {
    const icd = lavapipeIcd();
    const r = await openDawnDevice(icd === undefined ? {} : { vulkanDriverFiles: icd });
    if (r.ok) dawn = r.dawn;
    else why = r.reason;
  });
  afterAll(() => dawn?.dispose());
  for (const k of ALL_KERNELS) {
    test(`${k.name} compiles without errors`, async (ctx) => {
      if (dawn === undefined) ctx.skip(`no WebGPU device: ${why}`);
      expectOk(await validateWgsl(dawn!.device, lowerWgsl(k, WEBGPU_CAPS).text!));
    });
  }
  test("names that are WGSL keywords or builtins are renamed and compile", async (ctx) => {
    if (dawn === undefined) ctx.skip(`no WebGPU device: ${why}`);
    const k = kernel("clash", { workgroupSize: [8, 1, 1] }, ({ buffer, uniform, gid, let_, exp }) => {
      const select = buffer("select", "f32", "read");
      const loop = buffer("loop", "f32", "write");
      const params = uniform("params", "f32");
      loop.set(gid.x, let_(exp(select.at(gid.x)).mul(params), "exp"));
    });
    expectOk(await validateWgsl(dawn!.device, lowerWgsl(k, WEBGPU_CAPS).text!));
  });
  test("a planted malformed kernel (assignment to a let) fails", async (ctx) => {
    if (dawn === undefined) ctx.skip(`no WebGPU device: ${why}`);
    const text = lowerWgsl(ALL_KERNELS[0]!, WEBGPU_CAPS).text!.replace("partial[t] = acc;", "row = 3u;");
    const r = await validateWgsl(dawn!.device, text);
    expect(r.status).toBe("invalid");
    expect(r.status === "invalid" && r.message).toMatch(/row/);
  });
});
