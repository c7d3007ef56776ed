// The emitted Wasm runs in Node and agrees with the kernel-dsl interpreter on random inputs, for every
// test kernel (subgroups of one lane, the CPU target's caps).

import { describe, expect, test } from "vitest";
import { lowerWasm } from "@poot/codegen";
import { interpret } from "@poot/kernel-dsl";
import { ALL_KERNELS } from "./kernels.js";
import { cases, coverageCases, expectMatches, rng } from "./cases.js";
import { WASM_CAPS } from "./helpers.js";
import { runWasm } from "./wasm-runner.js";

describe("Wasm kernels match the interpreter", () => {
  test("every test kernel has a case", () => expect(cases.map((c) => c.kernel.name).sort()).toEqual(ALL_KERNELS.map((k) => k.name).sort()));
  for (const c of [...cases, ...coverageCases.filter((x) => x.kernel.name !== "subgroup_ops")]) {
    test(`${c.kernel.name} on random inputs`, () => {
      for (const seed of [1, 2, 3]) {
        const ref = c.buffers(rng(seed));
        const got = c.buffers(rng(seed));
        interpret(c.kernel, { grid: c.grid, buffers: ref, uniforms: c.uniforms, subgroupSize: 1 });
        const uniformTypes = Object.fromEntries(c.kernel.uniforms.map((u) => [u.name, u.type]));
        runWasm(lowerWasm(c.kernel, WASM_CAPS), { grid: c.grid, buffers: got, uniforms: c.uniforms, uniformTypes });
        expectMatches(c, ref, got, `seed ${seed}`);
        // Frames left nonzero by an earlier kernel (the CPU executor reuses scratch) change nothing. Only kernels
        // without barriers: with a skipped thread, a barrier kernel's uniform loop could spin instead of failing.
        const code = lowerWasm(c.kernel, WASM_CAPS);
        if (code.abi!["barriers"] === 0) {
          const dirty = c.buffers(rng(seed));
          runWasm(code, { grid: c.grid, buffers: dirty, uniforms: c.uniforms, uniformTypes, dirtyScratch: 0xa5 });
          expectMatches(c, ref, dirty, `seed ${seed}, dirty scratch`);
        }
      }
    });
  }
});
