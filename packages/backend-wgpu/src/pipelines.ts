// Compute pipelines cached by kernel hash (FNV-1a 64 of the WGSL text and entry point), each with the
// explicit bind-group layout its TargetCode's binding slots describe; compile errors carry Tint's messages.

// Kept in the emitted .d.ts (preserve): its GPU* types are @webgpu/types' globals, a dependency of this package.
/// <reference types="@webgpu/types" preserve="true" />

import type { TargetCode } from "@poot/codegen";
import type { KernelShape } from "./bind.js";
import { SHADER_COMPUTE } from "./buffers.js";
import type { WgpuDevice } from "./device.js";
import { WgpuError } from "./errors.js";

/** FNV-1a 64-bit of a string's UTF-16 code units, as 16 hex digits: the kernel hash. */
export function kernelHash(text: string): string {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n,
    mask = 0xffffffffffffffffn;
  for (let i = 0; i < text.length; i++) h = ((h ^ BigInt(text.charCodeAt(i))) * prime) & mask;
  return h.toString(16).padStart(16, "0");
}

/** A compiled pipeline and its layout. */
export interface CachedPipeline {
  /** Kernel hash (WGSL text + entry point). */
  readonly hash: string;
  /** Kernel name (of the first kernel that compiled to this text). */
  readonly kernel: string;
  /** The pipeline. */
  readonly pipeline: GPUComputePipeline;
  /** Its one bind-group layout (group 0). */
  readonly layout: GPUBindGroupLayout;
}

/** Layout entries of a lowered kernel: read-only storage for read buffers, storage otherwise, one uniform block. */
export function layoutEntries(kernel: KernelShape, code: TargetCode): GPUBindGroupLayoutEntry[] {
  return code.bindings.map((slot): GPUBindGroupLayoutEntry => {
    switch (slot.kind) {
      case "buffer": {
        const p = kernel.buffers.find((b) => b.name === slot.buffer);
        if (p === undefined)
          throw new WgpuError(
            "bad-binding",
            `binding ${slot.slot} names buffer ${slot.buffer}, which kernel ${kernel.name} lacks`,
            { kernel: kernel.name, key: slot.buffer },
          );
        const readOnly = p.access === "read" && p.atomic !== true;
        return {
          binding: slot.slot,
          visibility: SHADER_COMPUTE,
          buffer: { type: readOnly ? "read-only-storage" : "storage" },
        };
      }
      case "packed":
        return { binding: slot.slot, visibility: SHADER_COMPUTE, buffer: { type: "read-only-storage" } };
      case "uniforms":
        return { binding: slot.slot, visibility: SHADER_COMPUTE, buffer: { type: "uniform" } };
      default:
        slot satisfies never;
        throw new Error("unreachable binding kind");
    }
  });
}

/** Pipelines of one device by kernel hash; a second request for the same WGSL reuses the first pipeline. */
export class PipelineCache {
  readonly #device: WgpuDevice;
  readonly #byHash = new Map<string, { text: string; entry: Promise<CachedPipeline> }>();
  #hits = 0;
  #misses = 0;

  constructor(device: WgpuDevice) {
    this.#device = device;
  }

  /** Cache hits and compiles so far. */
  stats(): { readonly hits: number; readonly compiled: number } {
    return { hits: this.#hits, compiled: this.#misses };
  }

  /** The pipeline of `code` (lowered from `kernel`), compiling it on first use. */
  get(kernel: KernelShape, code: TargetCode): Promise<CachedPipeline> {
    if (code.target !== "wgsl" || code.text === undefined)
      throw new WgpuError("bad-binding", `kernel ${kernel.name} was lowered for ${code.target}, not WGSL`, {
        kernel: kernel.name,
        key: code.target,
      });
    const text = code.text;
    const hash = kernelHash(`${code.entryPoint}\n${text}`);
    const hit = this.#byHash.get(hash);
    // The text is compared too: a 64-bit collision must not run the wrong kernel.
    if (hit !== undefined && hit.text === text) {
      this.#hits++;
      return hit.entry;
    }
    this.#misses++;
    const entry = this.#compile(kernel, code, text, hash);
    this.#byHash.set(hash, { text, entry });
    // A failed compile is not cached: the next request reports the error again.
    entry.catch(() => this.#byHash.delete(hash));
    return entry;
  }

  async #compile(kernel: KernelShape, code: TargetCode, text: string, hash: string): Promise<CachedPipeline> {
    const dev = this.#device;
    const d = dev.device;
    const ctx = { kernel: kernel.name, hash };
    return dev.scoped(
      `compile ${kernel.name}`,
      async () => {
        const module = d.createShaderModule({ label: `${kernel.name} ${hash}`, code: text });
        const info = await module.getCompilationInfo();
        const errors = info.messages
          .filter((m) => m.type === "error")
          .map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
        if (errors.length > 0)
          throw new WgpuError("validation", `WGSL of ${kernel.name} does not compile:\n${errors.join("\n")}`, {
            operation: "createShaderModule",
            ...ctx,
          });
        const layout = d.createBindGroupLayout({ label: kernel.name, entries: layoutEntries(kernel, code) });
        let pipeline: GPUComputePipeline;
        try {
          pipeline = await d.createComputePipelineAsync({
            label: kernel.name,
            layout: d.createPipelineLayout({ bindGroupLayouts: [layout] }),
            compute: { module, entryPoint: code.entryPoint },
          });
        } catch (e) {
          const reason = (e as { reason?: string }).reason;
          throw new WgpuError(
            reason === "internal" ? "internal" : "validation",
            `pipeline of ${kernel.name}: ${e instanceof Error ? e.message : String(e)}`,
            { operation: "createComputePipeline", ...ctx },
          );
        }
        return { hash, kernel: kernel.name, pipeline, layout };
      },
      ctx,
    );
  }
}
