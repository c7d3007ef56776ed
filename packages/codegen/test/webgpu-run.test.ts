// A handful of emitted WGSL kernels run on lavapipe through Dawn and agree with the kernel-dsl interpreter,
// including the packed-inputs fallback (a device limit of 8 storage buffers) and a subgroup reduction.

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { lowerWgsl, openDawnDevice, type DawnDevice } from "@poot/codegen";
import { interpret } from "@poot/kernel-dsl";
import { cases, coverageCases, expectMatches, rng } from "./cases.js";
import { lavapipeIcd, WEBGPU_CAPS } from "./helpers.js";
import { runWgsl } from "./webgpu-runner.js";

describe("WGSL on a WebGPU device matches the interpreter", () => {
  let dawn: DawnDevice | undefined;
  let why = "";
  beforeAll(async () => {
    const icd = lavapipeIcd();
    const r = await openDawnDevice(icd === undefined ? {} : { vulkanDriverFiles: icd });
    if (r.ok) dawn = r.dawn;
    else why = r.reason;
  });
  afterAll(() => dawn?.dispose());
  test("narrow_storage with native f16 storage (enable f16) on random inputs", async (ctx) => {
    if (dawn === undefined) return ctx.skip(`no WebGPU device: ${why}`);
    if (!dawn.f16) return ctx.skip("the adapter lacks shader-f16");
    const c = coverageCases.find((x) => x.kernel.name === "narrow_storage")!;
    const code = lowerWgsl(c.kernel, { ...WEBGPU_CAPS, f16: true, dtypes: [...WEBGPU_CAPS.dtypes, "f16"] });
    expect(code.text).toMatch(/^enable f16;/);
    expect(code.text).toContain("array<f16>");
    const ref = c.buffers(rng(5));
    const got = c.buffers(rng(5));
    interpret(c.kernel, { grid: c.grid, buffers: ref, uniforms: c.uniforms });
    await runWgsl(dawn.device, c.kernel, code, c.grid, got, c.uniforms);
    expectMatches(c, ref, got, "native f16");
  });
  for (const c of [...cases, ...coverageCases]) {
    test(`${c.kernel.name} on random inputs`, async (ctx) => {
      if (dawn === undefined) return ctx.skip(`no WebGPU device: ${why}`);
      const usesSubgroups = c.kernel.name === "row_sum_subgroup" || c.kernel.name === "subgroup_ops";
      const sizes = dawn.subgroupSizes;
      if (usesSubgroups && (!dawn.subgroups || sizes === undefined || sizes[0] !== sizes[1])) {
        return ctx.skip(`the adapter has no fixed subgroup size (${JSON.stringify(sizes)})`);
      }
      const subgroupSize = usesSubgroups ? sizes![0] : 32;
      const caps = { ...WEBGPU_CAPS, subgroupSize };
      for (const seed of [1, 2]) {
        const ref = c.buffers(rng(seed));
        const got = c.buffers(rng(seed));
        interpret(c.kernel, { grid: c.grid, buffers: ref, uniforms: c.uniforms, subgroupSize });
        await runWgsl(dawn.device, c.kernel, lowerWgsl(c.kernel, caps), c.grid, got, c.uniforms);
        expectMatches(c, ref, got, `seed ${seed}`);
      }
    });
  }
});
