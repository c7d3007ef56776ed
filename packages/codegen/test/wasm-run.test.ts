// The emitted Wasm runs in Node and agrees with the kernel-dsl interpreter on random inputs, for every
// test kernel (subgroups of one lane, the CPU target's caps).

import { describe, expect, test } from "vitest";
import { lowerWasm } from "@poot/codegen";
import { interpret, kernel } from "@poot/kernel-dsl";
import { ALL_KERNELS } from "./kernels.js";
import { cases, coverageCases, expectMatches, rng, type Case } from "./cases.js";
import { WASM_CAPS } from "./helpers.js";
import { runWasm } from "./wasm-runner.js";

describe("Wasm kernels match the interpreter", () => {
  test("every test kernel has a case", () =>
    expect(cases.map((c) => c.kernel.name).sort()).toEqual(ALL_KERNELS.map((k) => k.name).sort()));
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

describe("a one-thread workgroup lowers its barriers away", () => {
  // Shared memory written, a barrier (also inside a loop and a branch), then read back reversed: with one thread per
  // workgroup the barriers order nothing, so the kernel runs with its names in Wasm locals (no frame slots).
  const reverse = kernel("one_thread_reverse", { workgroupSize: [1, 1, 1] }, (b) => {
    const x = b.buffer("x", "f32", "read");
    const y = b.buffer("y", "f32", "write");
    const s = b.shared("s", "f32", 8);
    const base = b.let_(b.wid.x.mul(8), "base");
    b.for_(
      b.u32(0),
      8,
      1,
      (i) => {
        const v = b.let_(x.at(base.add(i)).mul(b.f32(2)), "v");
        s.set(i, v);
        b.barrier();
      },
      "i",
    );
    b.if_(b.wid.x.lt(3), () => b.barrier());
    b.barrier();
    const acc = b.var_(b.f32(0), "acc");
    b.for_(
      b.u32(0),
      8,
      1,
      (i) => {
        acc.set(acc.add(s.at(b.u32(7).sub(i))));
        y.set(base.add(i), acc);
      },
      "j",
    );
  });
  const c: Case = {
    kernel: reverse,
    grid: [4, 1, 1],
    uniforms: {},
    tol: 0,
    buffers: (r) => ({ x: Float32Array.from({ length: 32 }, () => r() * 4 - 2), y: new Float32Array(32).fill(NaN) }),
  };

  test("matches the interpreter, reports no barriers and keeps no frame slots", () => {
    const code = lowerWasm(reverse, WASM_CAPS);
    expect(code.abi!["barriers"]).toBe(0);
    // Word 0 of a frame only (the thread's returned flag), rounded to 16 bytes: every name is a Wasm local.
    expect(code.abi!["frameBytes"]).toBe(16);
    for (const seed of [1, 2]) {
      const ref = c.buffers(rng(seed));
      const got = c.buffers(rng(seed));
      interpret(reverse, { grid: c.grid, buffers: ref, uniforms: {}, subgroupSize: 1 });
      runWasm(code, { grid: c.grid, buffers: got, uniforms: {}, uniformTypes: {} });
      expectMatches(c, ref, got, `seed ${seed}`);
    }
  });
});
