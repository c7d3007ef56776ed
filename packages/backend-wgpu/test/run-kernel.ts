// Test harness: runs one lowered kernel on host data through the backend's own path (buffers, pipeline cache,
// bind, step), to check codegen's WGSL against kernel-dsl's interpreter on a real device (Node and the browser test).

import type { TargetCode } from "@poot/codegen";
import type { Kernel, KernelBuffer } from "@poot/kernel-dsl";
import { WgpuError, type KernelArg, type WgpuBuffer, type WgpuContext } from "@poot/backend-wgpu";

/** What {@link runKernel} takes. */
export interface KernelRun {
  /** The kernel IR. */
  readonly kernel: Kernel;
  /** Its WGSL lowering. */
  readonly code: TargetCode;
  /** Workgroups along x, y, z. */
  readonly grid: readonly [number, number, number];
  /** Host data of every kernel buffer (bf16/f16 as Uint16 bits), by name; writable ones are updated in place. */
  readonly buffers: Readonly<Record<string, KernelBuffer>>;
  /** Every uniform, by name. */
  readonly uniforms?: Readonly<Record<string, number>>;
}

/** Uploads the buffers, dispatches the kernel once, and copies every writable buffer back into its array. */
export async function runKernel(ctx: WgpuContext, run: KernelRun): Promise<void> {
  const { kernel } = run;
  const made: WgpuBuffer[] = [];
  try {
    const args: Record<string, KernelArg> = {};
    for (const p of kernel.buffers) {
      const host = run.buffers[p.name];
      if (host === undefined)
        throw new WgpuError("bad-binding", `kernel ${kernel.name} needs buffer ${p.name}, which was not given`, {
          kernel: kernel.name,
          key: p.name,
        });
      const b = await ctx.buffers.upload("io", host, `${kernel.name}.${p.name}`);
      made.push(b);
      args[p.name] = { buffer: b };
    }
    const bound = await ctx.bind({
      kernel,
      code: run.code,
      grid: run.grid,
      args,
      ...(run.uniforms !== undefined ? { uniforms: run.uniforms } : {}),
    });
    const step = ctx.step([bound], { label: kernel.name });
    await step.submit();
    for (const p of kernel.buffers) {
      if (p.access === "read" && p.atomic !== true) continue;
      const host = run.buffers[p.name]!;
      const bytes = await args[p.name]!.buffer.read();
      new Uint8Array(host.buffer, host.byteOffset, host.byteLength).set(bytes);
    }
    step.dispose();
    bound.dispose();
  } finally {
    for (const b of made) b.destroy();
  }
}
