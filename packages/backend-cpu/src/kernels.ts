// A compiled Program's plans as Wasm kernels: kernelgen's shared plan -> kernel mapping, codegen's Wasm target,
// one WebAssembly.Module per plan, loaded once on every thread of the pool.

import { lowerWasm, type DeviceCaps as CodegenCaps, type TargetCode } from "@poot/codegen";
import type { Plan, Program } from "@poot/graph-plan";
import { KernelgenError, planKernel, type BindingSource, type SynthCaps } from "@poot/kernelgen";
import { CpuError, invariant } from "./errors.js";
import { MAX_PAGES, WA } from "./memory.js";
import type { ThreadPool } from "./pool.js";

/** The codegen caps of the Wasm target: subgroups of one lane, 16-bit and byte storage loaded natively. */
export const WASM_CODEGEN_CAPS: CodegenCaps = { maxWorkgroup: 1024, subgroupSize: 1, sharedBytes: 1 << 20, dtypes: ["f32", "u32", "i32", "f16", "bf16", "u8", "i8"], maxStorageBuffers: 1024, f16: false, bf16: false };

/** One plan's kernel, lowered and loaded. */
export interface CpuKernel {
  /** Index of the plan in the Program. */
  readonly index: number;
  readonly plan: Plan;
  /** Kernel id in the pool. */
  readonly id: number;
  readonly code: TargetCode;
  readonly grid: readonly [number, number, number];
  /** Argument words in order: buffer sources (binding order) then uniform raw bits. */
  readonly buffers: readonly BindingSource[];
  readonly uniformBits: readonly number[];
  /** Threads of one workgroup. */
  readonly threads: number;
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** Lowers every plan with a kernel to Wasm and loads the modules on the pool. */
export function loadKernels(program: Program, synth: SynthCaps, pool: ThreadPool, name: string): CpuKernel[] {
  const ident = name.replace(/[^A-Za-z0-9_]/g, "_");
  const pending: Omit<CpuKernel, "id">[] = [];
  const modules: { module: object; entry: string }[] = [];
  program.plans().forEach((plan, index) => {
    const src = plan.kernel;
    if (src.provenance === "none") return;
    let rk;
    try {
      rk = planKernel(src, synth, `${ident}_p${index}_${plan.op.toLowerCase()}`);
    } catch (e) {
      if (!(e instanceof KernelgenError)) throw e;
      throw new CpuError("unsupported-kernel", `plan ${index} (${plan.op}, ${src.request.kind}, eqn ${plan.eqn}) of ${name}: ${e.message}`, { program: name, plan: index });
    }
    const code = lowerWasm(rk.kernel, WASM_CODEGEN_CAPS, { maxPages: MAX_PAGES });
    const byName = new Map(rk.bindings.map((b) => [b.buffer, b.source] as const));
    const buffers: BindingSource[] = [];
    let uniformBits: number[] = [];
    for (const slot of code.bindings) {
      if (slot.kind === "buffer") {
        const s = byName.get(slot.buffer);
        invariant(s !== undefined, `kernel ${rk.kernel.name} binds ${slot.buffer} that planKernel does not map`);
        buffers.push(s);
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
      } else invariant(false, `kernel ${rk.kernel.name}: packed bindings do not occur with ${WASM_CODEGEN_CAPS.maxStorageBuffers} storage buffers`);
    }
    const [wx, wy, wz] = code.workgroupSize;
    pending.push({ index, plan, code, grid: rk.grid, buffers, uniformBits, threads: wx * wy * wz });
    modules.push({ module: new WA.Module(code.binary!), entry: code.entryPoint });
  });
  const ids = pool.load(modules);
  return pending.map((k, i) => ({ ...k, id: ids[i]! }));
}
