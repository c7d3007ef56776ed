// On a machine with an NVIDIA driver: PTX from codegen run through the backend against float64 references,
// slots copied inside a replayed CUDA graph, a typed JIT error. Skips elsewhere, saying so.
import { bf16BitsToF32, f32ToBf16Bits, kernel } from "@poot/kernel-dsl";
import { describe, expect, it } from "vitest";
import { createCudaContext, CudaError, loadDriver, loadPtx, type CudaContext } from "@poot/backend-cuda";
import { gemvRowsBf16, gemvRowsGrid } from "./row-gemvs.js";

function driverPresent(): boolean {
  try {
    loadDriver();
    return true;
  } catch {
    return false;
  }
}
const present = driverPresent();
if (!present) console.log("backend-cuda GPU tests skipped: no CUDA driver on this machine (libcuda.so.1 not loadable)");

/** out[i] = x[i] + f32(pos[0]): reads a Pos slot. */
const addPos = kernel("add_pos_test", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, gid, let_, if_, u32 } = k;
  const x = buffer("x", "f32", "read");
  const pos = buffer("pos", "u32", "read");
  const out = buffer("out", "f32", "write");
  const n = uniform("n", "u32");
  const i = let_(gid.x, "i");
  if_(i.lt(n), () => out.set(i, x.at(i).add(pos.at(u32(0)).f32())));
});

describe.skipIf(!present)("backend-cuda on a GPU (skipped: no CUDA driver on this machine)", () => {
  const withCtx = (fn: (ctx: CudaContext) => void) => () => {
    const ctx = createCudaContext();
    try {
      fn(ctx);
    } finally {
      ctx.dispose();
    }
  };

  it(
    "runs the bf16 row GEMV within 1e-6 of a float64 sum",
    withCtx((ctx) => {
      const N = 300;
      const K = 2048;
      const w = Uint16Array.from({ length: N * K }, (_, i) => f32ToBf16Bits(Math.sin(i * 0.37)));
      const x = Float32Array.from({ length: K }, (_, i) => Math.cos(i * 0.11));
      const k = ctx.compile(gemvRowsBf16);
      const [W, X, Y] = [ctx.upload(w), ctx.upload(x), ctx.allocate(4 * N)];
      const p = k.bind({ buffers: { W, x: X, y: Y }, uniforms: { N, K8: K / 8 } });
      k.launch(gemvRowsGrid(N), p);
      ctx.synchronize();
      const y = Y.download(new Float32Array(N));
      for (let n = 0; n < N; n++) {
        let s = 0;
        let mag = 0;
        for (let j = 0; j < K; j++) {
          s += bf16BitsToF32(w[n * K + j]!) * x[j]!;
          mag += Math.abs(bf16BitsToF32(w[n * K + j]!) * x[j]!);
        }
        expect(Math.abs(y[n]! - s) / Math.max(1, mag)).toBeLessThan(1e-6);
      }
      p.dispose();
    }),
  );

  it(
    "replays a captured slot copy and kernel with new slot values, allocating nothing",
    withCtx((ctx) => {
      const n = 256;
      const x = Float32Array.from({ length: n }, (_, i) => i * 0.25);
      const k = ctx.compile(addPos);
      const [X, pos, out] = [ctx.upload(x), ctx.allocate(4), ctx.allocate(4 * n)];
      const host = ctx.pinned(4);
      const p = k.bind({ buffers: { x: X, pos, out }, uniforms: { n } });
      const graph = ctx.capture(() => {
        host.copyTo(pos, ctx.stream, 4);
        k.launch([n / 64, 1, 1], p);
      });
      const allocs = ctx.pool.stats().driverAllocations;
      for (const v of [5, 1000, 70000]) {
        host.write(Uint32Array.of(v));
        graph.launch(ctx.stream);
        ctx.synchronize();
        expect(Array.from(out.download(new Float32Array(n)))).toEqual(Array.from(x, (xi) => Math.fround(xi + v)));
      }
      expect(ctx.pool.stats().driverAllocations).toBe(allocs);
      graph.dispose();
      host.dispose();
      p.dispose();
    }),
  );

  it(
    "reports rejected PTX as CudaError ptx-jit with the JIT log",
    withCtx((ctx) => {
      const bad =
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry broken() {\n  mov.u32 %r1, 1;\n  ret;\n}\n";
      try {
        loadPtx(ctx.device.api, bad, {
          arch: ctx.device.info.arch,
          driverVersion: ctx.device.info.driverVersion,
          name: "broken",
        });
        expect.unreachable("bad PTX was accepted");
      } catch (e) {
        expect(e).toBeInstanceOf(CudaError);
        expect((e as CudaError).code).toBe("ptx-jit");
        expect((e as CudaError).context.log).toMatch(/%r1/);
      }
    }),
  );
});
