// The device side of the WebGPU Device (decision 1601): runs the proxy's requests in order on a WgpuContext,
// keeping the buffers, pipelines, bound kernels and recorded steps they name by number.

import type { ByteRegion, LoweredKernel } from "@poot/executor";
import { checkGrid, type BoundKernel, type KernelShape, type PackCopy } from "../bind.js";
import { pad4, type BufferRole, type WgpuBuffer } from "../buffers.js";
import type { WgpuContext } from "../context.js";
import { WgpuError } from "../errors.js";
import type { Step } from "../step.js";
import type { DeviceRequest, WireOp } from "./protocol.js";

/** Buffer access of a lowered WGSL kernel's bindings, read off its declarations (`var<storage, read>`). */
export function kernelShapeOf(k: LoweredKernel): KernelShape {
  const text = k.code.text ?? "";
  const buffers = k.code.bindings.flatMap((b) => {
    if (b.kind !== "buffer") return [];
    const m = new RegExp(`@binding\\(${b.slot}\\)\\s*var<storage,\\s*(\\w+)>\\s*\\w+\\s*:\\s*array<(atomic)?`).exec(
      text,
    );
    return [{ name: b.buffer, access: m?.[1] === "read" ? "read" : "read_write", atomic: m?.[2] === "atomic" }];
  });
  return { name: k.name, buffers, uniforms: k.uniforms };
}

/** The buffer role of each lowered buffer kind (the rest are "io"). */
const ROLE: Partial<Record<string, BufferRole>> = { weight: "weight", slot: "slot", state: "state" };

/** Executes device requests on one context. */
export class WgpuOps {
  readonly #buffers = new Map<number, WgpuBuffer>();
  readonly #kernels = new Map<number, { shape: KernelShape; kernel: LoweredKernel }>();
  readonly #launches = new Map<number, BoundKernel>();
  readonly #steps = new Map<number, Step>();

  constructor(readonly ctx: WgpuContext) {}

  #buffer(id: number): WgpuBuffer {
    const b = this.#buffers.get(id);
    if (b === undefined)
      throw new WgpuError("disposed", `buffer #${id} is not held by the device`, { operation: "use" });
    return b;
  }

  /** Runs one request; resolves with its answer (a download's bytes) or null. */
  async handle(r: DeviceRequest): Promise<unknown> {
    switch (r.op) {
      case "allocate":
        this.#buffers.set(r.id, await this.ctx.buffers.create(ROLE[r.kind] ?? "io", r.bytes, r.label));
        return null;
      case "free":
        this.#buffers.get(r.id)?.destroy();
        this.#buffers.delete(r.id);
        return null;
      case "upload":
        this.#buffer(r.id).write(r.data, r.offset);
        return null;
      case "download": {
        // Reads start at a 4-byte boundary (WebGPU's copy rule); the bytes asked for are cut out of it.
        const at = r.offset - (r.offset % 4);
        const got = await this.#buffer(r.id).read(at, r.offset + r.bytes - at);
        return got.subarray(r.offset - at);
      }
      case "copy":
      case "zero": {
        const enc = this.ctx.device.device.createCommandEncoder();
        if (r.op === "zero") enc.clearBuffer(this.#buffer(r.id).gpu);
        else
          for (const c of this.#copies(r.from, r.to, r.regions))
            enc.copyBufferToBuffer(c.from, c.fromOffset, c.to, c.toOffset, c.bytes);
        this.ctx.device.device.queue.submit([enc.finish()]);
        return null;
      }
      case "load": {
        const shape = kernelShapeOf(r.kernel);
        // Compiled now, so bad WGSL is reported at stage time; bind finds the pipeline in the cache.
        await this.ctx.pipelines.get(shape, r.kernel.code);
        this.#kernels.set(r.id, { shape, kernel: r.kernel });
        return null;
      }
      case "bind": {
        const k = this.#kernels.get(r.kernel)!;
        const args = Object.fromEntries(
          Object.entries(r.buffers).map(([n, id]) => [n, { buffer: this.#buffer(id), changes: true }]),
        );
        // The grid comes with each recorded launch (a Device binds buffers and uniforms only).
        const bound = await this.ctx.bind({
          kernel: k.shape,
          code: k.kernel.code,
          grid: [0, 0, 0],
          args,
          uniforms: r.uniforms,
        });
        this.#launches.set(r.id, bound);
        return null;
      }
      case "unbind":
        this.#launches.get(r.id)?.dispose();
        this.#launches.delete(r.id);
        return null;
      case "record":
        this.#steps.set(r.id, this.#record(r.ops, r.name));
        return null;
      case "submit":
        await this.#steps.get(r.id)!.submit();
        return null;
      case "release":
        this.#steps.get(r.id)?.dispose();
        this.#steps.delete(r.id);
        return null;
      // Every earlier request has run and passed its error scopes; the queue keeps the GPU's order, and reads wait.
      case "sync":
        this.ctx.device.assertAlive("sync");
        return null;
      case "dispose":
        this.ctx.dispose();
        return null;
      default:
        return r satisfies never;
    }
  }

  /** A step of the recorded launches: copies before a launch go before its dispatch, trailing ones after the last. */
  #record(ops: readonly WireOp[], name: string): Step {
    const kernels: BoundKernel[] = [],
      before: PackCopy[][] = [];
    let pending: PackCopy[] = [];
    for (const op of ops) {
      if (op.kind === "copy") pending.push(...this.#copies(op.from, op.to, op.regions));
      else {
        const k = this.#launches.get(op.launch)!;
        checkGrid(this.ctx, k.kernel, op.grid);
        kernels.push({ ...k, grid: op.grid });
        before.push(pending);
        pending = [];
      }
    }
    return this.ctx.step(kernels, { label: name, before, after: pending });
  }

  /** Copy commands of byte regions; WebGPU copies whole 4-byte words, so a region must start on one. */
  #copies(from: number, to: number, regions: readonly ByteRegion[]): PackCopy[] {
    const src = this.#buffer(from),
      dst = this.#buffer(to);
    return regions.map((g) => {
      // A region may end off a word only where both buffers end (their padding takes the rest of the word).
      const tail = g.srcOffset + g.bytes === src.bytes && g.dstOffset + g.bytes === dst.bytes;
      if (g.srcOffset % 4 !== 0 || g.dstOffset % 4 !== 0 || (g.bytes % 4 !== 0 && !tail))
        throw new WgpuError(
          "unsupported-kernel",
          `copy ${src.label} -> ${dst.label}: region at ${g.srcOffset} -> ${g.dstOffset} of ${g.bytes} bytes is not whole 4-byte words`,
          { operation: "copy", key: dst.label },
        );
      return { from: src.gpu, fromOffset: g.srcOffset, to: dst.gpu, toOffset: g.dstOffset, bytes: pad4(g.bytes) };
    });
  }
}
