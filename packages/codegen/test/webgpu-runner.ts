// A small WebGPU harness: binds an emitted WGSL kernel's slots (buffers, packed inputs, uniforms) as its
// TargetCode describes them, dispatches it on a Dawn device and reads the writable buffers back.

import type { TargetCode } from "@poot/codegen";
import type { Kernel, KernelBuffer } from "@poot/kernel-dsl";

const pad4 = (n: number): number => Math.ceil(n / 4) * 4;

function bytesOf(a: KernelBuffer): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** Runs `code` (lowered from `kernel`) over `grid` workgroups; writable buffers are updated in place. */
export async function runWgsl(
  device: GPUDevice,
  kernel: Kernel,
  code: TargetCode,
  grid: readonly [number, number, number],
  buffers: Record<string, KernelBuffer>,
  uniforms: Record<string, number>,
): Promise<void> {
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const layoutEntries: GPUBindGroupLayoutEntry[] = [];
  const entries: GPUBindGroupEntry[] = [];
  const readBack: { name: string; buf: GPUBuffer; bytes: number }[] = [];
  const uniformValues = new Map(Object.entries(uniforms));
  const make = (data: Uint8Array, use: number): GPUBuffer => {
    const buf = device.createBuffer({ size: Math.max(16, pad4(data.byteLength)), usage: use });
    const padded = new Uint8Array(pad4(data.byteLength));
    padded.set(data);
    device.queue.writeBuffer(buf, 0, padded);
    return buf;
  };
  for (const slot of code.bindings) {
    if (slot.kind === "buffer") {
      const p = kernel.buffers.find((b) => b.name === slot.buffer)!;
      const buf = make(bytesOf(buffers[slot.buffer]!), usage);
      const readOnly = p.access === "read" && !p.atomic;
      layoutEntries.push({
        binding: slot.slot,
        visibility: GPUShaderStage.COMPUTE,
        buffer: { type: readOnly ? "read-only-storage" : "storage" },
      });
      entries.push({ binding: slot.slot, resource: { buffer: buf } });
      if (!readOnly) readBack.push({ name: slot.buffer, buf, bytes: buffers[slot.buffer]!.byteLength });
    } else if (slot.kind === "packed") {
      // Each member at its own word offset, as the executor would pack them.
      const parts = slot.members.map((m) => bytesOf(buffers[m.buffer]!));
      const all = new Uint8Array(parts.reduce((n, b) => n + pad4(b.byteLength), 0));
      let at = 0;
      slot.members.forEach((m, i) => {
        all.set(parts[i]!, at);
        uniformValues.set(m.offsetUniform, at / 4);
        at += pad4(parts[i]!.byteLength);
      });
      layoutEntries.push({
        binding: slot.slot,
        visibility: GPUShaderStage.COMPUTE,
        buffer: { type: "read-only-storage" },
      });
      entries.push({ binding: slot.slot, resource: { buffer: make(all, usage) } });
    } else {
      const words = new DataView(new ArrayBuffer(Math.max(16, Math.ceil((slot.order.length * 4) / 16) * 16)));
      slot.order.forEach((name, i) => {
        const type = kernel.uniforms.find((u) => u.name === name)?.type ?? "u32";
        if (type === "f32") words.setFloat32(4 * i, uniformValues.get(name)!, true);
        else words.setUint32(4 * i, uniformValues.get(name)! >>> 0, true);
      });
      layoutEntries.push({ binding: slot.slot, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } });
      entries.push({
        binding: slot.slot,
        resource: { buffer: make(new Uint8Array(words.buffer), GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST) },
      });
    }
  }
  const bgl = device.createBindGroupLayout({ entries: layoutEntries });
  device.pushErrorScope("validation");
  const pipeline = device.createComputePipeline({
    layout: device.createPipelineLayout({ bindGroupLayouts: [bgl] }),
    compute: { module: device.createShaderModule({ code: code.text! }), entryPoint: code.entryPoint },
  });
  const bindGroup = device.createBindGroup({ layout: bgl, entries });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(grid[0], grid[1], grid[2]);
  pass.end();
  const staging = readBack.map((r) => {
    const s = device.createBuffer({
      size: Math.max(16, pad4(r.bytes)),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    enc.copyBufferToBuffer(r.buf, 0, s, 0, pad4(r.bytes));
    return s;
  });
  device.queue.submit([enc.finish()]);
  const err = await device.popErrorScope();
  if (err !== null) throw new Error(`WebGPU validation error: ${err.message}`);
  for (const [i, r] of readBack.entries()) {
    const s = staging[i]!;
    await s.mapAsync(GPUMapMode.READ);
    bytesOf(buffers[r.name]!).set(new Uint8Array(s.getMappedRange()).subarray(0, r.bytes));
    s.unmap();
  }
}
