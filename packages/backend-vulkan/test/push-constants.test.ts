// Push constants: a SPIR-V module written with codegen's SpirvModule builder reads (a, b, n) from a
// PushConstant block; one recording is resubmitted with different push-constant bytes re-recorded per value.

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SpirvModule, validateSpirv, type TargetCode } from "@poot/codegen";
import { kernel } from "@poot/kernel-dsl";
import { Recording, VulkanKernel, type VulkanDevice } from "@poot/backend-vulkan";
import { noVulkan, openDevice } from "./helpers.js";

// Numbers from the SPIR-V 1.3 specification.
const Op = {
  Load: 61,
  Store: 62,
  AccessChain: 65,
  CompositeExtract: 81,
  ConvertUToF: 112,
  FAdd: 129,
  FMul: 133,
  ULessThan: 176,
};
const SC = { Input: 1, PushConstant: 9, StorageBuffer: 12 };

/** out[i] = a · i + b for i < n, with (a: f32, b: f32, n: u32) push constants; workgroup 64. */
function affineSpirv(): Uint8Array {
  const m = new SpirvModule();
  m.capability(1);
  const voidT = m.typeVoid(),
    u32 = m.typeInt(32, false),
    f32 = m.typeFloat(32),
    v3 = m.typeVector(u32, 3);
  const fn = m.function(voidT, m.typeFunction(voidT));
  const out = m.variable(
    m.typePointer(SC.StorageBuffer, m.typeStruct([m.typeRuntimeArray(f32, 4)], { block: true, offsets: [0] })),
    SC.StorageBuffer,
  );
  m.decorate(out, 34, 0);
  m.decorate(out, 33, 0);
  const pc = m.variable(
    m.typePointer(SC.PushConstant, m.typeStruct([f32, f32, u32], { block: true, offsets: [0, 4, 8] })),
    SC.PushConstant,
  );
  const gid = m.variable(m.typePointer(SC.Input, v3), SC.Input);
  m.decorate(gid, 11, 28);
  const i = fn.op(Op.CompositeExtract, u32, fn.op(Op.Load, v3, gid), 0);
  const field = (k: number, t: number): number =>
    fn.op(Op.Load, t, fn.op(Op.AccessChain, m.typePointer(SC.PushConstant, t), pc, m.u32(k)));
  const a = field(0, f32),
    b = field(1, f32),
    n = field(2, u32);
  fn.ifThen(fn.op(Op.ULessThan, m.typeBool(), i, n), () => {
    const v = fn.op(Op.FAdd, f32, fn.op(Op.FMul, f32, a, fn.op(Op.ConvertUToF, f32, i)), b);
    fn.stmt(Op.Store, fn.op(Op.AccessChain, m.typePointer(SC.StorageBuffer, f32), out, m.u32(0), i), v);
  });
  fn.end();
  m.entryPoint(5, fn.id, "main", [gid]);
  m.executionMode(fn.id, 17, 64, 1, 1);
  return m.bytes();
}

/** The kernel's interface (one writable f32 buffer), as kernel IR; the body lives in the SPIR-V above. */
const iface = kernel("pc_affine", { workgroupSize: [64, 1, 1] }, (k) => void k.buffer("out", "f32", "write"));

describe.skipIf(noVulkan !== undefined)(
  `push constants${noVulkan === undefined ? "" : ` (skipped: ${noVulkan})`}`,
  () => {
    let device: VulkanDevice;
    beforeAll(() => {
      device = openDevice();
    });
    afterAll(() => device?.dispose());

    test("values pushed per recording reach the shader; the validation layer stays quiet", async () => {
      const binary = affineSpirv();
      const check = await validateSpirv(binary);
      if (check.status !== "unavailable") expect(check.status, JSON.stringify(check)).toBe("ok");
      const code: TargetCode = {
        target: "spirv",
        kernel: "pc_affine",
        entryPoint: "main",
        ext: "spv",
        binary,
        workgroupSize: [64, 1, 1],
        bindings: [{ kind: "buffer", slot: 0, buffer: "out" }],
      };
      const k = VulkanKernel.create(device, iface, code, { pushConstantBytes: 12 });
      expect(k.pipeline.layout.pushConstantBytes).toBe(12);
      const out = device.createBuffer(4 * 100, "host", "out");
      const bound = k.bind({ out });
      for (const [a, b, n] of [
        [0.5, -3, 100],
        [-2, 7.25, 37],
      ] as const) {
        out.mapped().fill(0);
        const pcs = new DataView(new ArrayBuffer(12));
        pcs.setFloat32(0, a, true);
        pcs.setFloat32(4, b, true);
        pcs.setUint32(8, n, true);
        const rec = Recording.record(device, [
          { kind: "dispatch", kernel: bound, grid: [2, 1, 1], pushConstants: new Uint8Array(pcs.buffer) },
        ]);
        rec.submit();
        rec.dispose();
        const got = new Float32Array(out.mapped().slice().buffer);
        const want = Float32Array.from({ length: 100 }, (_, i) => (i < n ? Math.fround(Math.fround(a * i) + b) : 0));
        expect(Array.from(got)).toEqual(Array.from(want));
      }
      expect(device.instance.errors()).toEqual([]);
    });
  },
);
