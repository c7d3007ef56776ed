// A compiled Program's plans as kernels: kernelgen's shared plan -> kernel mapping, codegen's Wasm target, one
// WebAssembly.Module per plan, loaded once on every thread of the pool; or a native GEMV (decision 0952).

import { lowerWasm, type DeviceCaps as CodegenCaps, type TargetCode } from "@poot/codegen";
import type { Plan, Program } from "@poot/graph-plan";
import {
  KernelgenError,
  planKernel,
  synthesizeRequest,
  type BindingSource,
  type PlanKernel,
  type SynthCaps,
} from "@poot/kernelgen";
import { CpuError, invariant } from "./errors.js";
import { MAX_PAGES, WA } from "./memory.js";
import type { NativeLibrary } from "./native/library.js";
import { routeNative, type NativeBinding } from "./native/route.js";
import type { PoolKernel, ThreadPool } from "./pool.js";

/** The codegen caps of the Wasm target: subgroups of one lane, 16-bit and byte storage loaded natively. */
export const WASM_CODEGEN_CAPS: CodegenCaps = {
  maxWorkgroup: 1024,
  subgroupSize: 1,
  sharedBytes: 1 << 20,
  dtypes: ["f32", "u32", "i32", "f16", "bf16", "u8", "i8"],
  maxStorageBuffers: 1024,
  f16: false,
  bf16: false,
};

/** What a kernel's argument block and per-thread areas need (codegen's Wasm ABI, or a native kernel's). */
export interface KernelAbi {
  readonly argWords: number;
  readonly sharedBytes: number;
  readonly frameBytes: number;
}

/** One plan's kernel, lowered and loaded (a plan served natively with an epilogue has two, in order). */
export interface CpuKernel {
  /** Index of the plan in the Program. */
  readonly index: number;
  readonly plan: Plan;
  /** Kernel id in the pool. */
  readonly id: number;
  /** The Wasm code (absent for a native kernel). */
  readonly code?: TargetCode;
  /** The native kernel set that runs it ("avx512", "avx2"), when native. */
  readonly native?: string;
  readonly abi: KernelAbi;
  readonly grid: readonly [number, number, number];
  /** Argument words in order: buffer sources (binding order) then uniform raw bits. */
  readonly buffers: readonly NativeBinding[];
  readonly uniformBits: readonly number[];
  /** Threads of one workgroup. */
  readonly threads: number;
  /** Bytes of the program's accumulator scratch this kernel uses (native GEMV + epilogue pairs). */
  readonly scratchBytes: number;
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

type Pending = Omit<CpuKernel, "id">;

/** A PlanKernel lowered to Wasm, with its bindings mapped through `map` (identity for a plan's own kernel). */
function lowered(
  rk: PlanKernel,
  index: number,
  plan: Plan,
  map: (s: BindingSource) => NativeBinding,
  scratchBytes = 0,
): { k: Pending; load: PoolKernel } {
  const code = lowerWasm(rk.kernel, WASM_CODEGEN_CAPS, { maxPages: MAX_PAGES });
  const byName = new Map(rk.bindings.map((b) => [b.buffer, b.source] as const));
  const buffers: NativeBinding[] = [];
  let uniformBits: number[] = [];
  for (const slot of code.bindings) {
    if (slot.kind === "buffer") {
      const s = byName.get(slot.buffer);
      invariant(s !== undefined, `kernel ${rk.kernel.name} binds ${slot.buffer} that planKernel does not map`);
      buffers.push(map(s));
    } else if (slot.kind === "uniforms") {
      const types = new Map(rk.kernel.uniforms.map((u) => [u.name, u.type] as const));
      uniformBits = slot.order.map((u) => {
        const v = rk.uniforms[u];
        invariant(v !== undefined, `kernel ${rk.kernel.name} has no value for uniform ${u}`);
        if (types.get(u) === "f32") {
          F32[0] = v;
          return U32[0]!;
        }
        return v >>> 0;
      });
    } else
      invariant(
        false,
        `kernel ${rk.kernel.name}: packed bindings do not occur with ${WASM_CODEGEN_CAPS.maxStorageBuffers} storage buffers`,
      );
  }
  const [wx, wy, wz] = code.workgroupSize;
  const abi = {
    argWords: code.abi!["argWords"]!,
    sharedBytes: code.abi!["sharedBytes"]!,
    frameBytes: code.abi!["frameBytes"]!,
  };
  return {
    k: { index, plan, code, abi, grid: rk.grid, buffers, uniformBits, threads: wx * wy * wz, scratchBytes },
    load: { module: new WA.Module(code.binary!), entry: code.entryPoint },
  };
}

/** The kernels of a plan a native GEMV serves: the GEMV, then its epilogue's Wasm phase if it has one. */
function nativeKernels(
  plan: Plan,
  index: number,
  native: NativeLibrary,
  base: number,
  threads: number,
  synth: SynthCaps,
  ident: string,
): { k: Pending; load: PoolKernel }[] | null {
  const route = routeNative(plan, threads);
  if (route === null) return null;
  const nbuf = route.buffers.length;
  const gemv = {
    k: {
      index,
      plan,
      native: native.isa,
      abi: { argWords: nbuf + route.uniforms.length + 5, sharedBytes: 0, frameBytes: 0 },
      grid: route.grid,
      buffers: route.buffers,
      uniformBits: route.uniforms,
      threads: 1,
      scratchBytes: route.scratchBytes,
    },
    load: { native: { native: true, library: native.path, koffi: native.koffi, base, nbuf } } as const,
  };
  if (route.epilogue === null) return [gemv];
  const epi = route.epilogue;
  const rk = synthesizeRequest(epi.request, synth, `${ident}_p${index}_epilogue`);
  const pk: PlanKernel = { kernel: rk.kernel, grid: rk.grid, uniforms: {}, bindings: rk.bindings };
  return [gemv, lowered(pk, index, plan, (s) => (s.kind === "output" ? s : epi.binding(s.index)), route.scratchBytes)];
}

/** Where a program's kernels come from: the synth caps of the Wasm kernels, and the native library if any. */
export interface KernelSources {
  readonly synth: SynthCaps;
  /** Native GEMVs serve the plans they can (null: every plan runs its Wasm kernel). */
  readonly native: NativeLibrary | null;
  /** Byte address of the shared memory (for native kernels). */
  readonly base: number;
}

/** Lowers every plan with a kernel (natively where a native GEMV serves it, else to Wasm) and loads them on the pool. */
export function loadKernels(program: Program, sources: KernelSources, pool: ThreadPool, name: string): CpuKernel[] {
  const ident = name.replace(/[^A-Za-z0-9_]/g, "_");
  const pending: { k: Pending; load: PoolKernel }[] = [];
  program.plans().forEach((plan, index) => {
    const src = plan.kernel;
    if (src.provenance === "none") return;
    try {
      const native =
        sources.native === null
          ? null
          : nativeKernels(plan, index, sources.native, sources.base, pool.threads, sources.synth, ident);
      if (native !== null) pending.push(...native);
      else
        pending.push(
          lowered(planKernel(src, sources.synth, `${ident}_p${index}_${plan.op.toLowerCase()}`), index, plan, (s) => s),
        );
    } catch (e) {
      if (!(e instanceof KernelgenError)) throw e;
      throw new CpuError(
        "unsupported-kernel",
        `plan ${index} (${plan.op}, ${src.request.kind}, eqn ${plan.eqn}) of ${name}: ${e.message}`,
        { program: name, plan: index },
      );
    }
  });
  const ids = pool.load(pending.map((p) => p.load));
  return pending.map((p, i) => ({ ...p.k, id: ids[i]! }));
}
