// Typed errors from a real device: no WebGPU, limits an adapter lacks, WebGPU validation errors caught by
// error scopes, oversized buffers, bad bindings, and device loss surfacing on every later operation.

import { describe, expect, it } from "vitest";
import { lowerWgsl } from "@poot/codegen";
import { kernel } from "@poot/kernel-dsl";
import { codegenCaps, openWgpu, requestWgpuDevice, WgpuError, type WgpuContext } from "@poot/backend-wgpu";
import { nodeGpu } from "@poot/backend-wgpu/node";
import { lavapipeIcd, openTestContext } from "./helpers.js";

async function codeOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e, "expected a WgpuError").toBeInstanceOf(WgpuError);
  return (e as WgpuError).code;
}

function syncCodeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(WgpuError);
    return (e as WgpuError).code;
  }
  throw new Error("expected a WgpuError");
}

/** y[i] = x[i] + 1 over 64 elements, x read-only and y writable. */
const inc = kernel("inc", { workgroupSize: [64, 1, 1] }, (k) => {
  const x = k.buffer("x", "f32", "read");
  const y = k.buffer("y", "f32", "write");
  const i = k.let_(k.gid.x, "i");
  k.if_(i.lt(64), () => y.set(i, x.at(i).add(1)));
});

async function withContext(fn: (ctx: WgpuContext) => Promise<void>, t: { skip: (why: string) => void }): Promise<void> {
  const r = await openTestContext();
  if (!("ctx" in r)) return t.skip(r.reason);
  try {
    await fn(r.ctx);
  } finally {
    r.ctx.dispose();
  }
}

describe("typed errors", () => {
  it("no navigator.gpu is no-webgpu", async () => {
    expect(await codeOf(requestWgpuDevice(undefined))).toBe("no-webgpu");
  });

  it("a limit above the adapter's is limit-exceeded, naming the limit", async (t) => {
    const icd = lavapipeIcd();
    const gpu = await nodeGpu(icd !== undefined ? { vulkanDriverFiles: icd } : {});
    if ((await gpu.requestAdapter()) === null)
      return t.skip('no WebGPU adapter (eval "$(bash .ci/lavapipe-setup)" sets up lavapipe)');
    const e = await requestWgpuDevice(gpu, { minLimits: { maxStorageBuffersPerShaderStage: 1_000_000 } }).then(
      () => null,
      (x: unknown) => x as WgpuError,
    );
    expect(e?.code).toBe("limit-exceeded");
    expect(e?.context.key).toBe("maxStorageBuffersPerShaderStage");
    expect(e?.context.expected).toBe(1_000_000);
  });

  it("binding one buffer as both the read-only input and the writable output is a validation error on submit", async (t) => {
    await withContext(async (ctx) => {
      const buf = await ctx.buffers.create("io", 256, "both");
      const bound = await ctx.bind({
        kernel: inc,
        code: lowerWgsl(inc, codegenCaps(ctx.caps)),
        grid: [1, 1, 1],
        args: { x: { buffer: buf }, y: { buffer: buf } },
      });
      const e = await ctx
        .step([bound])
        .submit()
        .then(
          () => null,
          (x: unknown) => x as WgpuError,
        );
      expect(e?.code).toBe("validation");
      expect(e?.context.operation).toMatch(/^submit/);
    }, t);
  });

  it("bad bindings are caught before the device sees them", async (t) => {
    await withContext(async (ctx) => {
      const code = lowerWgsl(inc, codegenCaps(ctx.caps));
      const x = await ctx.buffers.create("io", 256, "x"),
        y = await ctx.buffers.create("io", 256, "y");
      expect(await codeOf(ctx.bind({ kernel: inc, code, grid: [1, 1, 1], args: { x: { buffer: x } } }))).toBe(
        "bad-binding",
      );
      expect(
        await codeOf(
          ctx.bind({
            kernel: inc,
            code,
            grid: [1, 1, 1],
            args: { x: { buffer: x }, y: { buffer: y }, z: { buffer: y } },
          }),
        ),
      ).toBe("bad-binding");
      expect(
        await codeOf(
          ctx.bind({ kernel: inc, code, grid: [1, 1, 1], args: { x: { buffer: x, offset: 4 }, y: { buffer: y } } }),
        ),
      ).toBe("bad-binding");
      expect(
        await codeOf(
          ctx.bind({
            kernel: inc,
            code,
            grid: [ctx.caps.maxWorkgroupsPerDimension + 1, 1, 1],
            args: { x: { buffer: x }, y: { buffer: y } },
          }),
        ),
      ).toBe("bad-binding");
      expect(syncCodeOf(() => x.write(new Float32Array(65)))).toBe("bad-binding");
    }, t);
  });

  it("a buffer past maxBufferSize is out-of-memory, with the sizes", async (t) => {
    await withContext(async (ctx) => {
      const e = await ctx.buffers.create("weight", ctx.caps.maxBufferBytes + 4, "huge").then(
        () => null,
        (x: unknown) => x as WgpuError,
      );
      expect(e?.code).toBe("out-of-memory");
      expect(e?.context.expected).toBe(ctx.caps.maxBufferBytes);
    }, t);
  });

  it("device loss resolves `lost` and turns every later operation into device-lost", async (t) => {
    const r = await openTestContext();
    if (!("ctx" in r)) return t.skip(r.reason);
    const ctx = r.ctx;
    const x = await ctx.buffers.create("io", 256, "x"),
      y = await ctx.buffers.create("io", 256, "y");
    const bound = await ctx.bind({
      kernel: inc,
      code: lowerWgsl(inc, codegenCaps(ctx.caps)),
      grid: [1, 1, 1],
      args: { x: { buffer: x }, y: { buffer: y } },
    });
    const step = ctx.step([bound]);
    // A loss the context did not ask for: the raw device is destroyed underneath it.
    ctx.device.device.destroy();
    const lost = await ctx.device.lost;
    expect(lost.code).toBe("device-lost");
    expect(lost.context.reason).toBe("destroyed");
    expect(ctx.device.isLost).toBe(true);
    expect(syncCodeOf(() => step.submit())).toBe("device-lost");
    expect(await codeOf(y.read())).toBe("device-lost");
    expect(await codeOf(ctx.buffers.create("io", 16, "after"))).toBe("device-lost");
    ctx.dispose();
    expect(syncCodeOf(() => ctx.step([]))).toBe("disposed");
  });

  it("opening a context twice gives independent devices", async (t) => {
    const icd = lavapipeIcd();
    const gpu = await nodeGpu(icd !== undefined ? { vulkanDriverFiles: icd } : {});
    if ((await gpu.requestAdapter()) === null)
      return t.skip('no WebGPU adapter (eval "$(bash .ci/lavapipe-setup)" sets up lavapipe)');
    const [a, b] = [await openWgpu(gpu), await openWgpu(gpu)];
    a.dispose();
    expect(a.device.isLost).toBe(true);
    expect(b.device.isLost).toBe(false);
    await b.buffers.create("io", 16, "still-fine");
    b.dispose();
  });
});
