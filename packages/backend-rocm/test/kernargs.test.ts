// Metadata parsing and kernarg packing on a code object llc + ld.lld build here from a hand-written kernel whose
// signature (two buffers, an i32 and an f32 uniform) the test states; the demo model's kernels, checked against
// llvm-readobj, are in packages/cli/test/rocm-kernargs.test.ts.
import { assembleAmdgpu } from "@poot/codegen";
import {
  checkLayout,
  expectedLayout,
  packKernargs,
  readCodeObjectMetadata,
  RocmError,
  type KernargSignature,
  type KernelMeta,
} from "@poot/backend-rocm";
import { describe, expect, test } from "vitest";

const IR = `target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @scale(ptr addrspace(1) %a, ptr addrspace(1) %b, i32 %n, float %s) #0 {
entry:
  %v = load float, ptr addrspace(1) %a
  %w = fmul float %v, %s
  store float %w, ptr addrspace(1) %b
  ret void
}
attributes #0 = { "amdgpu-flat-work-group-size"="64,64" "uniform-work-group-size"="true" }
`;
const SIG: KernargSignature = {
  name: "scale",
  buffers: 2,
  uniforms: [
    { name: "n", type: "i32" },
    { name: "s", type: "f32" },
  ],
};
const probe = await assembleAmdgpu("", { mcpu: "gfx90a" });
const NO_LLVM = probe.status === "unavailable" ? probe.reason : undefined;

async function build(mcpu: string): Promise<Uint8Array> {
  const r = await assembleAmdgpu(IR, { mcpu });
  if (r.status !== "ok" || r.artifact === undefined) throw new Error(`assemble ${mcpu}: ${JSON.stringify(r)}`);
  return r.artifact;
}

const errorOf = (f: () => unknown): RocmError => {
  try {
    f();
  } catch (err) {
    if (err instanceof RocmError) return err;
    throw err;
  }
  throw new Error("expected a RocmError");
};

describe.skipIf(NO_LLVM !== undefined)(
  `kernargs of a hand-written kernel${NO_LLVM ? ` (skipped: ${NO_LLVM})` : ""}`,
  () => {
    for (const mcpu of ["gfx90a", "gfx942", "gfx1100"]) {
      test(`${mcpu}: the metadata's explicit arguments are the signature's, hidden ones follow, packing writes them`, async () => {
        const md = readCodeObjectMetadata(await build(mcpu));
        expect(md.target).toContain(mcpu);
        const k = md.kernels.find((x) => x.name === "scale") as KernelMeta;
        expect(k.symbol).toBe("scale.kd");
        expect(k.args.slice(0, 4).map((a) => [a.valueKind, a.offset, a.size])).toEqual([
          ["global_buffer", 0, 8],
          ["global_buffer", 8, 8],
          ["by_value", 16, 4],
          ["by_value", 20, 4],
        ]);
        expect(k.args.slice(4).every((a) => a.valueKind.startsWith("hidden_"))).toBe(true);
        checkLayout(k, SIG);
        const p = packKernargs(
          k,
          SIG,
          { buffers: [0x1000n, 0x2000n], uniforms: [-3, 1.5] },
          { grid: [7, 1, 1], block: [64, 1, 1] },
        );
        expect(p.bytes.length).toBe(k.kernargSegmentSize);
        expect(p.offsets).toEqual(expectedLayout(SIG).map((a) => a.offset));
        const v = new DataView(p.bytes.buffer);
        expect([
          v.getBigUint64(0, true),
          v.getBigUint64(8, true),
          v.getInt32(16, true),
          v.getFloat32(20, true),
        ]).toEqual([0x1000n, 0x2000n, -3, 1.5]);
        const at = (kind: string): number => (k.args.find((a) => a.valueKind === kind) as { offset: number }).offset;
        expect([
          v.getUint32(at("hidden_block_count_x"), true),
          v.getUint16(at("hidden_group_size_x"), true),
          v.getUint16(at("hidden_group_size_y"), true),
        ]).toEqual([7, 64, 1]);
      });
    }

    test("a planted mismatch fails: a shifted offset, a missing uniform, a wrong kind", async () => {
      const k = readCodeObjectMetadata(await build("gfx942")).kernels[0] as KernelMeta;
      const shifted: KernelMeta = { ...k, args: k.args.map((a, i) => (i === 2 ? { ...a, offset: a.offset + 4 } : a)) };
      const e = errorOf(() =>
        packKernargs(shifted, SIG, { buffers: [1n, 2n], uniforms: [1, 2] }, { grid: [1, 1, 1], block: [64, 1, 1] }),
      );
      expect(e.code).toBe("kernarg_mismatch");
      expect(e.message).toBe(
        "kernel scale: argument 2: the code object has by_value at 20 (4 bytes), the executor expects by_value at 16 (4 bytes)",
      );
      expect(errorOf(() => checkLayout(k, { ...SIG, uniforms: SIG.uniforms.slice(0, 1) })).message).toMatch(
        /4 explicit arguments, the executor binds 3/,
      );
      expect(
        errorOf(() => checkLayout(k, { ...SIG, buffers: 1, uniforms: [...SIG.uniforms, { name: "x", type: "u32" }] }))
          .message,
      ).toMatch(/argument 1: the code object has global_buffer at 8/);
    });

    test("a file that is not a code object gets bad_code_object, one line", () => {
      for (const [bytes, msg] of [
        [new Uint8Array(10), /not an ELF file/],
        [new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 1, 1, ...new Array(60).fill(0)]), /64-bit little-endian/],
      ] as const) {
        const e = errorOf(() => readCodeObjectMetadata(bytes));
        expect(e.code).toBe("bad_code_object");
        expect(e.message).toMatch(msg);
        expect(e.message).not.toContain("\n");
      }
    });
  },
);
