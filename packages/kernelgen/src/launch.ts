// Launching imported kernels from graph-plan's `{ name, metadata }` (the u32 launch metadata of an imported plan):
// which uniforms the metadata fills and how many workgroups to launch, per library kernel.

import type { Kernel } from "@poot/kernel-dsl";
import { checkGrid, grid2d } from "./caps.js";
import type { SynthCaps } from "./caps.js";
import { KernelgenError } from "./errors.js";
import { IMPORTED_KERNELS, importedKernel } from "./library.js";
import type { ImportedKernelName } from "./library.js";
import type { BindingSource } from "./adapter/request.js";

/** How to run one imported kernel. */
export interface ImportedLaunch {
  readonly kernel: Kernel;
  /** Uniform values by name. */
  readonly uniforms: Readonly<Record<string, number>>;
  /** Workgroups along x, y, z (the kernel's spec defaults give its workgroup size). */
  readonly grid: readonly [number, number, number];
  /** For the kernels graph-plan imports: which request input (or the output) each kernel buffer binds. */
  readonly bindings?: readonly { readonly buffer: string; readonly source: BindingSource }[];
}

const ceil = (a: number, b: number): number => Math.max(1, Math.ceil(a / b));

/** Grid limits an imported launch must respect (the device's per-axis workgroup limit; default 65535). */
export type LaunchCaps = Pick<SynthCaps, "maxGridDim">;

type Layout = {
  readonly arity: number;
  readonly bind?: Readonly<Record<string, number | "out">>;
  /** `linear`: 1-D launches of linearized kernels (wid.y · nwg.x + wid.x), split over x/y past the x limit. */
  readonly launch: (
    m: readonly number[],
    linear: (wgs: number) => [number, number, number],
  ) => { uniforms: Record<string, number>; grid: [number, number, number] };
};

const gemv = (layout: "kn" | "nk"): Layout => ({
  arity: 3,
  bind: { x: 0, W: 1, y: "out" },
  // [K, N, rows(, tileN)] — the tile is graph-plan's schedule hint; these kernels size their own tiles.
  launch: ([K, N, rows], linear) => {
    if ((rows as number) > 8)
      throw new KernelgenError("bad_param", `imported GEMV serves at most 8 rows, got ${rows}`, {
        synth: "importedLaunch",
        param: "rows",
        value: rows,
      });
    return {
      uniforms: { K: K as number, N: N as number, B: rows as number },
      grid: linear(layout === "kn" ? ceil(N as number, 32) : (N as number)),
    };
  },
});

/** Metadata layout per imported kernel: graph-plan's for the kernels its planner imports, documented order otherwise. */
const LAYOUTS: Record<ImportedKernelName, Layout> = {
  gemv_f32_kn: gemv("kn"),
  gemv_bf16_kn: gemv("kn"),
  gemv_f32_nk: gemv("nk"),
  gemv_bf16_nk: gemv("nk"),
  // [M, N, K, transposeB]
  gemm_tiled_f32: {
    arity: 4,
    bind: { A: 0, B: 1, C: "out" },
    launch: ([M, N, K, t]) => ({
      uniforms: { M: M!, N: N!, K: K!, transB: t! },
      grid: [ceil(N!, 16), ceil(M!, 16), 1],
    }),
  },
  gemm_tiled_bf16: {
    arity: 4,
    bind: { A: 0, B: 1, C: "out" },
    launch: ([M, N, K, t]) => ({
      uniforms: { M: M!, N: N!, K: K!, transB: t! },
      grid: [ceil(N!, 16), ceil(M!, 16), 1],
    }),
  },
  // [V, chunk, rows]
  argmax_chunk: {
    arity: 3,
    bind: { x: 0, out: "out" },
    launch: ([V, c, rows]) => ({
      uniforms: { V: V!, CHUNK: c!, nChunks: ceil(V!, c!) },
      grid: [ceil(V!, c!), rows!, 1],
    }),
  },
  // [V, nChunks, rows]
  argmax_combine: {
    arity: 3,
    bind: { x: 0, candidates: 1, out: "out" },
    launch: ([V, n, rows]) => ({ uniforms: { V: V!, nChunks: n! }, grid: [rows!, 1, 1] }),
  },
  // [n, key0, key1, c1, c2, c3]
  philox_bits: {
    arity: 6,
    launch: ([n, k0, k1, c1, c2, c3], linear) => ({
      uniforms: { n: n!, key0: k0!, key1: k1!, c1: c1!, c2: c2!, c3: c3! },
      grid: linear(ceil(ceil(n!, 4), 64)),
    }),
  },
  philox_uniform: {
    arity: 6,
    launch: ([n, k0, k1, c1, c2, c3], linear) => ({
      uniforms: { n: n!, key0: k0!, key1: k1!, c1: c1!, c2: c2!, c3: c3! },
      grid: linear(ceil(ceil(n!, 4), 64)),
    }),
  },
  // [V, rows]
  sample_gumbel: { arity: 2, launch: ([V, rows]) => ({ uniforms: { V: V! }, grid: [rows!, 1, 1] }) },
  sample_top_k_top_p: { arity: 2, launch: ([V, rows]) => ({ uniforms: { V: V! }, grid: [rows!, 1, 1] }) },
  // [R, V, rowBytes]
  gather_rows_packed: {
    arity: 3,
    launch: ([R, V, rb], linear) => ({
      uniforms: { R: R!, V: V!, rowBytes: rb! },
      grid: linear(ceil(ceil(R! * rb!, 4), 64)),
    }),
  },
  // [R, V, D]
  gather_rows_bf16_f32: {
    arity: 3,
    launch: ([R, V, D], linear) => ({ uniforms: { R: R!, V: V!, D: D! }, grid: linear(ceil(R! * D!, 64)) }),
  },
  gather_rows_q8_0_f32: {
    arity: 3,
    launch: ([R, V, D], linear) => ({ uniforms: { R: R!, V: V!, D: D! }, grid: linear(ceil(R! * D!, 64)) }),
  },
  // [n]
  convert_bf16x2_f32: {
    arity: 1,
    launch: ([n], linear) => ({ uniforms: { n: n! }, grid: linear(ceil(ceil(n!, 2), 64)) }),
  },
};

/**
 * The launch of imported kernel `name` for `metadata` (graph-plan's KernelSource `{ name, metadata }` for the
 * kernels its planner imports: gemv_<dtype>_<kn|nk> [K, N, rows, tileN], gemm_tiled_<dtype> [M, N, K, transposeB],
 * argmax_chunk [V, chunk, rows], argmax_combine [V, nChunks, rows]; see the README for the others).
 * The grid respects `caps.maxGridDim` (default 65535) on x and min(that, 65535) on y and z: kernels that linearize
 * their workgroup id (GEMV, philox, gathers, convert) are split over x and y.
 * Throws `unknown_kernel` for a name outside the library, `bad_param` for short metadata and `exceeds_caps` for a
 * launch whose grid cannot fit the limits (then a caller may synthesize instead).
 */
export function importedLaunch(name: string, metadata: readonly number[], caps: LaunchCaps = {}): ImportedLaunch {
  if (!(IMPORTED_KERNELS as readonly string[]).includes(name))
    throw new KernelgenError("unknown_kernel", `no imported kernel named ${JSON.stringify(name)}`, {
      synth: "importedLaunch",
      value: name,
    });
  const layout = LAYOUTS[name as ImportedKernelName];
  if (metadata.length < layout.arity || metadata.some((m) => !Number.isInteger(m) || m < 0)) {
    throw new KernelgenError(
      "bad_param",
      `${name} needs ${layout.arity} non-negative integer metadata values, got [${metadata.join(", ")}]`,
      { synth: "importedLaunch", param: "metadata", value: metadata },
    );
  }
  const { uniforms, grid } = layout.launch(metadata, (wgs) => grid2d(wgs, caps));
  checkGrid(`importedLaunch(${name})`, grid, caps);
  const kernel = importedKernel(name as ImportedKernelName);
  const bind = layout.bind;
  if (bind === undefined) return { kernel, uniforms, grid };
  const bindings = kernel.buffers.map((p) => {
    const s = bind[p.name];
    return {
      buffer: p.name,
      source: (s === "out" ? { kind: "output" } : { kind: "input", index: s as number }) as BindingSource,
    };
  });
  return { kernel, uniforms, grid, bindings };
}
