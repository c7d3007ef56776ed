// The example kernels that @poot/kernel-dsl ships as .kir.json assets (built with its DSL by pootc) lower for
// every target and pass each validator that is installed; the WGSL goes through Tint when a device exists.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  CodegenError,
  openDawnDevice,
  TARGETS,
  validateTargetCode,
  type DawnDevice,
  type DeviceCaps,
  type TargetName,
} from "@poot/codegen";
import { parseKirJson } from "@poot/kernel-dsl";
import { AMD_CAPS, CUDA_CAPS, lavapipeIcd, VULKAN_CAPS, WASM_CAPS, WEBGPU_CAPS } from "./helpers.js";

const assets = join(dirname(fileURLToPath(import.meta.url)), "../../kernel-dsl/test/fixtures/assets");
const files = existsSync(assets) ? readdirSync(assets).filter((f) => f.endsWith(".kir.json")) : [];
const caps: Record<TargetName, DeviceCaps> = {
  wgsl: WEBGPU_CAPS,
  ptx: CUDA_CAPS,
  spirv: VULKAN_CAPS,
  amdgpu: AMD_CAPS,
  wasm: { ...WASM_CAPS },
  x86: { ...WASM_CAPS },
};

describe.skipIf(files.length === 0)(
  `kernel-dsl example assets${files.length === 0 ? " (skipped: no assets folder)" : ""}`,
  () => {
    let dawn: DawnDevice | undefined;
    beforeAll(async () => {
      const icd = lavapipeIcd();
      const r = await openDawnDevice(icd === undefined ? {} : { vulkanDriverFiles: icd });
      if (r.ok) dawn = r.dawn;
    });
    afterAll(() => dawn?.dispose());
    for (const f of files) {
      test(f, async () => {
        const kernel = parseKirJson(readFileSync(join(assets, f), "utf8"), f);
        for (const name of Object.keys(TARGETS) as TargetName[]) {
          // The CPU target has one-lane subgroups; kernels using subgroups need a real subgroup size there.
          if (name === "wasm" && JSON.stringify(kernel).includes('"subgroup')) continue;
          let code;
          try {
            code = TARGETS[name].lower(kernel, caps[name]);
          } catch (e) {
            // x86 runs a workgroup's invocations in a loop: barriers, shared memory and the grid size are refused.
            if (name === "x86" && e instanceof CodegenError && e.code === "unsupported") continue;
            throw e;
          }
          for (const v of await validateTargetCode(code, dawn ? { wgslDevice: dawn.device } : {})) {
            expect(v.result.status === "invalid" ? `${name}/${v.label}: ${v.result.message}` : "not invalid").toBe(
              "not invalid",
            );
          }
        }
      });
    }
  },
);
