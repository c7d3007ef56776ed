import { describe, expect, test } from "vitest";
import { kernel } from "@poot/kernel-dsl";
import type { DeviceCaps } from "../caps.js";
import { CodegenError } from "../errors.js";
import { lowerWgsl } from "../wgsl/target.js";
import { prepare } from "./prepare.js";

const caps: DeviceCaps = {
  maxWorkgroup: 256,
  subgroupSize: undefined,
  sharedBytes: 1024,
  dtypes: ["f32"],
  maxStorageBuffers: 4,
  f16: false,
  bf16: false,
};

const wide = kernel("wide", { workgroupSize: [{ spec: "WG" }, 1, 1], specs: { WG: 64 } }, ({ buffer, gid }) => {
  const o = buffer("o", "u32", "write");
  o.set(gid.x, gid.x);
});
const bigShared = kernel("big_shared", { workgroupSize: [64, 1, 1] }, ({ shared, lid, f32 }) => {
  const s = shared("s", "f32", 512);
  s.set(lid.x, f32(0));
});
const sg = kernel("sg", { workgroupSize: [64, 1, 1] }, ({ buffer, gid, subgroupAdd }) => {
  const o = buffer("o", "u32", "write");
  o.set(gid.x, subgroupAdd(gid.x));
});
const manyWritten = kernel("many_written", { workgroupSize: [64, 1, 1] }, ({ buffer, gid }) => {
  for (let j = 0; j < 6; j++) buffer(`o${j}`, "u32", "write").set(gid.x, gid.x);
});

/** y[0] = lane 0 of a `lanes`-wide load of x (decision 2310's wide vectors). */
const vecLoad = (lanes: 4 | 8 | 16) =>
  kernel(`vec${lanes}`, { workgroupSize: [1, 1, 1] }, (b) => {
    const x = b.buffer("x", "f32", "read");
    const y = b.buffer("y", "f32", "write");
    y.set(b.u32(0), x.atVec(b.u32(0), `vec${lanes}<f32>`).lane(0));
  });

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return e instanceof CodegenError ? e.code : `not a CodegenError: ${String(e)}`;
  }
  return undefined;
}

describe("capability checks give typed errors", () => {
  test("specs resolve from options, then defaults", () => {
    expect(prepare(wide, caps, "wgsl").workgroupSize).toEqual([64, 1, 1]);
    expect(prepare(wide, caps, "wgsl", { specs: { WG: 128 } }).workgroupSize).toEqual([128, 1, 1]);
  });
  test("a workgroup larger than the device allows", () =>
    expect(codeOf(() => prepare(wide, caps, "wgsl", { specs: { WG: 512 } }))).toBe("missing-capability"));
  test("more shared memory than the device has", () =>
    expect(codeOf(() => prepare(bigShared, caps, "ptx"))).toBe("missing-capability"));
  test("vectors wider than the caps' vectorLanes (or than vec4 on a target without wide vectors)", () => {
    const cpu = { ...caps, vectorLanes: 8 };
    expect(prepare(vecLoad(8), cpu, "x86").workgroupSize).toEqual([1, 1, 1]);
    expect(prepare(vecLoad(4), caps, "wasm").workgroupSize).toEqual([1, 1, 1]);
    // Planted: 16 lanes where the caps report 8; 8 lanes on x86 without the field; 8 lanes on Wasm whatever the caps.
    expect(codeOf(() => prepare(vecLoad(16), cpu, "x86"))).toBe("missing-capability");
    expect(codeOf(() => prepare(vecLoad(8), caps, "x86"))).toBe("missing-capability");
    expect(codeOf(() => prepare(vecLoad(8), { ...caps, vectorLanes: 16 }, "wasm"))).toBe("missing-capability");
  });
  test("subgroup ops on a device without subgroups", () =>
    expect(codeOf(() => prepare(sg, caps, "spirv"))).toBe("missing-capability"));
  test("more written buffers than bindings (nothing packable)", () => {
    const e = (() => {
      try {
        lowerWgsl(manyWritten, caps);
      } catch (x) {
        return x;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(CodegenError);
    expect((e as CodegenError).code).toBe("binding-limit");
    expect((e as CodegenError).context).toMatchObject({ kernel: "many_written", target: "wgsl", value: 6 });
  });
});
