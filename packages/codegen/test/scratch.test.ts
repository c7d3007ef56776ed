import { test } from "vitest";
import { lowerAmdgpu, assembleAmdgpu } from "@poot/codegen";
import { ALL_KERNELS } from "./kernels.js";
import { AMD_CAPS } from "./helpers.js";
test("scratch", async () => {
  for (const k of ALL_KERNELS) {
    const code = lowerAmdgpu(k, AMD_CAPS);
    for (const mcpu of ["gfx90a", "gfx942", "gfx1100"]) {
      const v = await assembleAmdgpu(code.text!, { mcpu });
      console.log(k.name, mcpu, v.status, v.status === "invalid" ? v.message.slice(0, 800) : v.status === "ok" ? v.artifact?.length : v.reason);
      if (v.status === "invalid") { console.log(code.text); break; }
    }
  }
});
