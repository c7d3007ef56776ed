// Correctness on the GPU: kernel-dsl kernels lowered by codegen to PTX, run through this backend and
// compared with the kernel-dsl interpreter on the same random inputs; plus slot copies inside a CUDA graph.

import { arrayClassFor, f32ToBf16Bits, interpret, kernel, type Kernel, type KernelBuffer } from "@poot/kernel-dsl";
import { synthesizeGemv } from "@poot/kernelgen";
// The imported library's sources (their .kir.json assets are read from disk, which a bundle cannot do).
import { convert_bf16x2_f32 } from "../../kernelgen/kernels/convert.js";
import { gemv_bf16_kn, gemv_bf16_nk, gemv_f32_kn } from "../../kernelgen/kernels/gemv.js";
import { type CudaContext, type DeviceBuffer } from "@poot/backend-cuda";
import { gemvRowsBf16, gemvRowsBf16x2, gemvRowsF32, gemvRowsGrid } from "../test/row-gemvs.js";
import { rng } from "@poot/testkit";

export { rng };

/** One launch: kernel, grid, inputs, uniforms and the output tolerance (0 = bit-exact). */
interface Case {
  readonly name: string;
  readonly kernel: Kernel;
  readonly grid: [number, number, number];
  readonly uniforms: Record<string, number>;
  readonly buffers: Record<string, KernelBuffer>;
  readonly tol: number;
  readonly specs?: Record<string, number>;
}

/** Result of one case. */
export interface CaseResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

const f32s = (n: number, r: () => number): Float32Array => Float32Array.from({ length: n }, () => r() * 2 - 1);
const bf16s = (n: number, r: () => number): Uint16Array =>
  Uint16Array.from({ length: n }, () => f32ToBf16Bits(r() * 2 - 1));
const poisoned = (n: number): Float32Array => new Float32Array(n).fill(NaN);

/** out[i] = x[i] + f32(pos[0]) for i < n: a step kernel that reads a Pos slot. */
export const addPos = kernel("add_pos", { workgroupSize: [64, 1, 1] }, (k) => {
  const { buffer, uniform, gid, let_, if_, u32 } = k;
  const x = buffer("x", "f32", "read");
  const pos = buffer("pos", "u32", "read");
  const out = buffer("out", "f32", "write");
  const n = uniform("n", "u32");
  const i = let_(gid.x, "i");
  if_(i.lt(n), () => out.set(i, x.at(i).add(pos.at(u32(0)).f32())));
});

function cases(ctx: CudaContext): Case[] {
  const r = rng(7);
  const sg = ctx.caps.subgroupSize ?? 32;
  const synthBf16 = synthesizeGemv(
    { name: "kg_gemv_nk_bf16", K: 520, N: 37, weight: { dtype: "bf16", layout: "nk" } },
    ctx.caps,
  );
  const synthF32 = synthesizeGemv(
    { name: "kg_gemv_nk_f32", K: 300, N: 45, weight: { dtype: "f32", layout: "nk" } },
    ctx.caps,
  );
  return [
    {
      name: "gemv_rows_bf16",
      kernel: gemvRowsBf16,
      grid: gemvRowsGrid(37, sg),
      uniforms: { N: 37, K8: 64 },
      tol: 1e-5,
      buffers: { W: new Uint32Array(bf16s(37 * 512, r).buffer), x: f32s(512, r), y: poisoned(37) },
    },
    {
      name: "gemv_rows_bf16_x2",
      kernel: gemvRowsBf16x2,
      grid: gemvRowsGrid(21, sg),
      uniforms: { N: 21, K8: 128 },
      tol: 1e-5,
      buffers: { W: new Uint32Array(bf16s(21 * 1024, r).buffer), x: f32s(1024, r), y: poisoned(21) },
    },
    {
      name: "gemv_rows_f32",
      kernel: gemvRowsF32,
      grid: gemvRowsGrid(45, sg),
      uniforms: { N: 45, K4: 75 },
      tol: 1e-5,
      buffers: { W: f32s(45 * 300, r), x: f32s(300, r), y: poisoned(45) },
    },
    {
      name: "kernelgen synth gemv nk bf16",
      kernel: synthBf16.kernel,
      grid: [...synthBf16.grid],
      uniforms: {},
      tol: 1e-5,
      buffers: { x: f32s(520, r), W: bf16s(37 * 520, r), y: poisoned(37) },
    },
    {
      name: "kernelgen synth gemv nk f32",
      kernel: synthF32.kernel,
      grid: [...synthF32.grid],
      uniforms: {},
      tol: 1e-5,
      buffers: { x: f32s(300, r), W: f32s(45 * 300, r), y: poisoned(45) },
    },
    {
      name: "kernelgen gemv_f32_kn",
      kernel: gemv_f32_kn,
      grid: [Math.ceil(130 / 32), 1, 1],
      uniforms: { K: 300, N: 130, B: 1 },
      tol: 1e-5,
      buffers: { W: f32s(300 * 130, r), x: f32s(300, r), y: poisoned(130) },
    },
    {
      name: "kernelgen gemv_bf16_kn",
      kernel: gemv_bf16_kn,
      grid: [Math.ceil(130 / 32), 1, 1],
      uniforms: { K: 300, N: 130, B: 2 },
      tol: 1e-5,
      buffers: { W: bf16s(300 * 130, r), x: f32s(600, r), y: poisoned(260) },
    },
    {
      name: "kernelgen gemv_bf16_nk",
      kernel: gemv_bf16_nk,
      grid: [45, 1, 1],
      uniforms: { K: 300, N: 45, B: 3 },
      tol: 1e-5,
      buffers: { W: bf16s(45 * 300, r), x: f32s(900, r), y: poisoned(135) },
    },
    {
      name: "kernelgen convert_bf16x2_f32",
      kernel: convert_bf16x2_f32,
      grid: [3, 1, 1],
      uniforms: { n: 301 },
      tol: 0,
      buffers: { in: new Uint32Array(bf16s(302, r).buffer), out: poisoned(301) },
    },
    {
      name: "add_pos",
      kernel: addPos,
      grid: [2, 1, 1],
      uniforms: { n: 100 },
      tol: 0,
      buffers: { x: f32s(128, r), pos: Uint32Array.of(12345), out: poisoned(128) },
    },
  ];
}

function compare(c: Case, want: Record<string, KernelBuffer>, got: Record<string, KernelBuffer>): CaseResult {
  const notes: string[] = [];
  let ok = true;
  for (const b of c.kernel.buffers) {
    if (b.access === "read") continue;
    const w = want[b.name]!;
    const h = got[b.name]!;
    if (c.tol === 0 || !(w instanceof Float32Array)) {
      const wb = new Uint8Array(w.buffer, w.byteOffset, w.byteLength);
      const hb = new Uint8Array(h.buffer, h.byteOffset, h.byteLength);
      const same = wb.every((v, i) => v === hb[i]);
      ok &&= same;
      notes.push(`${b.name}: ${same ? "bit-exact" : "DIFFERS"}`);
      continue;
    }
    const hf = h as Float32Array;
    const scale = Math.max(1, ...Array.from(w, (v) => (Number.isFinite(v) ? Math.abs(v) : 0)));
    let err = 0;
    w.forEach((v, i) => {
      if (Number.isNaN(v)) err = Number.isNaN(hf[i]) ? err : Infinity;
      else err = Math.max(err, Math.abs(hf[i]! - v) / scale);
    });
    ok &&= err <= c.tol;
    notes.push(`${b.name}: max rel err ${err.toExponential(2)} (tol ${c.tol})`);
  }
  return { name: c.name, ok, detail: notes.join("; ") };
}

/** Runs every case on the GPU and against the interpreter. */
export function runCorrectness(ctx: CudaContext): CaseResult[] {
  const out: CaseResult[] = [];
  for (const c of cases(ctx)) {
    try {
      const want: Record<string, KernelBuffer> = {};
      for (const [k, v] of Object.entries(c.buffers)) want[k] = v.slice();
      interpret(c.kernel, {
        grid: c.grid,
        buffers: want,
        uniforms: c.uniforms,
        subgroupSize: ctx.caps.subgroupSize ?? 32,
      });
      const compiled = ctx.compile(c.kernel);
      const dev: Record<string, DeviceBuffer> = {};
      for (const [k, v] of Object.entries(c.buffers)) dev[k] = ctx.upload(v);
      const params = compiled.bind({ buffers: dev, uniforms: c.uniforms });
      compiled.launch(c.grid, params);
      ctx.synchronize();
      const got: Record<string, KernelBuffer> = {};
      for (const b of c.kernel.buffers)
        got[b.name] = dev[b.name]!.download(arrayClassFor(b.elem).make(c.buffers[b.name]!.length));
      const res = compare(c, want, got);
      out.push({ ...res, detail: `${res.detail}; ${compiled.fn.registers} regs, ${compiled.fn.localBytes} B local` });
      params.dispose();
      for (const b of Object.values(dev)) b.dispose();
    } catch (e) {
      out.push({ name: c.name, ok: false, detail: `threw ${(e as Error).message}` });
    }
  }
  return out;
}

/** Slots in a CUDA graph: a pinned-memory copy of `pos` and add_pos captured once, replayed with new values. */
export function runSlotGraph(ctx: CudaContext): CaseResult {
  const n = 1000;
  const x = f32s(n, rng(3));
  const k = ctx.compile(addPos);
  const xb = ctx.upload(x);
  const pos = ctx.allocate(4);
  const out = ctx.allocate(4 * n);
  const host = ctx.pinned(4);
  const params = k.bind({ buffers: { x: xb, pos, out }, uniforms: { n } });
  const graph = ctx.capture(() => {
    host.copyTo(pos, ctx.stream, 4);
    k.launch([Math.ceil(n / 64), 1, 1], params);
  });
  const before = ctx.pool.stats().driverAllocations;
  const notes: string[] = [`${graph.nodeCount} nodes`];
  let ok = graph.nodeCount === 2;
  for (const p of [7, 123456, 3, 4_000_000]) {
    host.write(Uint32Array.of(p));
    graph.launch(ctx.stream);
    ctx.synchronize();
    const got = out.download(new Float32Array(n));
    const bad = got.findIndex((v, i) => v !== Math.fround(x[i]! + Math.fround(p)));
    ok &&= bad < 0;
    notes.push(`pos ${p}: ${bad < 0 ? "ok" : `element ${bad} is ${got[bad]}, want ${Math.fround(x[bad]! + p)}`}`);
  }
  const allocs = ctx.pool.stats().driverAllocations - before;
  ok &&= allocs === 0;
  notes.push(`${allocs} device allocations during replays`);
  graph.dispose();
  params.dispose();
  host.dispose();
  for (const b of [xb, pos, out]) b.dispose();
  return { name: "slot copy + kernel in a CUDA graph", ok, detail: notes.join("; ") };
}
