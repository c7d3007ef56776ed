// kernelArgs: the launch argument list must follow the PTX entry's .param list, which is parsed here from
// codegen's emitted text (the oracle) rather than taken from the bindings the code under test reads.
import { lowerPtx } from "@poot/codegen";
import { describe, expect, it } from "vitest";
import { kernelArgs } from "./context.js";
import { cudaCaps, type CudaDeviceInfo } from "./device.js";
import type { DeviceBuffer } from "./memory.js";
import { gemvRowsBf16 } from "../test/row-gemvs.js";
import { CudaError } from "./errors.js";

const H200: CudaDeviceInfo = {
  name: "NVIDIA H200",
  ordinal: 0,
  computeCapability: [9, 0],
  arch: "sm_90",
  driverVersion: 13000,
  multiprocessors: 132,
  totalMemoryBytes: 150109880320,
  maxThreadsPerBlock: 1024,
  sharedBytesPerBlock: 49152,
  sharedBytesOptin: 232448,
  warpSize: 32,
  memoryBusWidthBits: 6016,
  memoryClockKHz: 3201000,
};

/** `.param` declarations of the first entry of a PTX text, as [type, name suffix]. */
function ptxParams(ptx: string, entry: string): [string, string][] {
  const head = ptx.slice(ptx.indexOf(`.entry ${entry}(`), ptx.indexOf(")", ptx.indexOf(`.entry ${entry}(`)));
  return [...head.matchAll(/\.param \.(\w+) (\w+)/g)].map((m) => [m[1]!, m[2]!.slice(entry.length + 1)]);
}

const fakeBuffer = (ptr: bigint): DeviceBuffer => ({ ptr }) as DeviceBuffer;

describe("kernelArgs", () => {
  it("orders pointers and uniforms as the PTX entry declares its parameters", () => {
    const code = lowerPtx(gemvRowsBf16, cudaCaps(H200), { arch: "sm_90" });
    const params = ptxParams(code.text!, code.entryPoint);
    const args = kernelArgs(gemvRowsBf16, code, {
      buffers: { W: fakeBuffer(0x1000n), x: fakeBuffer(0x2000n), y: fakeBuffer(0x3000n) },
      uniforms: { N: 37, K8: 64 },
    });
    const byName: Record<string, unknown> = { W: 0x1000n, x: 0x2000n, y: 0x3000n, N: 37, K8: 64 };
    expect(args.map((a) => a.value)).toEqual(params.map(([, name]) => byName[name]));
    expect(args.map((a) => (a.kind === "ptr" ? "u64" : a.kind))).toEqual(params.map(([t]) => t));
  });

  it("names the missing buffer or uniform", () => {
    const code = lowerPtx(gemvRowsBf16, cudaCaps(H200), { arch: "sm_90" });
    const b = { W: fakeBuffer(1n), x: fakeBuffer(2n), y: fakeBuffer(3n) };
    expect(() => kernelArgs(gemvRowsBf16, code, { buffers: { W: b.W, x: b.x }, uniforms: { N: 1, K8: 1 } })).toThrow(
      /needs buffer "y"/,
    );
    expect(() => kernelArgs(gemvRowsBf16, code, { buffers: b, uniforms: { N: 1 } })).toThrow(CudaError);
  });
});

describe("cudaCaps", () => {
  it("derives codegen caps from the device attributes", () => {
    const caps = cudaCaps(H200);
    expect([caps.maxWorkgroup, caps.subgroupSize, caps.sharedBytes, caps.bf16]).toEqual([1024, 32, 49152, true]);
    expect(cudaCaps({ ...H200, computeCapability: [7, 5] }).bf16).toBe(false);
  });
});
