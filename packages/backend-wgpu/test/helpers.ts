// Test setup: opens a WebGPU context on Dawn (lavapipe when its ICD is on disk or named by VK_DRIVER_FILES),
// or says why none exists; plus the float64 helpers the oracles use.

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { openWgpu, WgpuError, type WgpuContext } from "@poot/backend-wgpu";
import { nodeGpu } from "@poot/backend-wgpu/node";

/** lavapipe's ICD manifest (tests may read the environment; the library never does). */
export function lavapipeIcd(): string | undefined {
  const fromEnv = process.env["VK_DRIVER_FILES"];
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  const p = join(homedir(), ".cache", "lavapipe25", "lvp_icd.json");
  return existsSync(p) ? p : undefined;
}

/** A context, or the reason there is none (then the test skips saying so). */
export async function openTestContext(): Promise<{ ctx: WgpuContext } | { reason: string }> {
  const icd = lavapipeIcd();
  try {
    const gpu = await nodeGpu(icd !== undefined ? { vulkanDriverFiles: icd } : {});
    return { ctx: await openWgpu(gpu) };
  } catch (e) {
    if (e instanceof WgpuError && (e.code === "no-webgpu" || e.code === "no-adapter"))
      return { reason: `no WebGPU adapter: ${e.message} (eval "$(bash .ci/lavapipe-setup)" sets up lavapipe)` };
    throw e;
  }
}

/** Seeded uniform numbers in [lo, hi) (mulberry32): the conformance suite's. */
export { seededFloats as rand } from "@poot/executor/conformance";

/** bf16 bits of an f32 (round to nearest even), written from the format's definition. */
export function bf16Bits(x: number): number {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0]!;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The f32 value of bf16 bits (exact: the bits become the high half). */
export function bf16Value(bits: number): number {
  return new Float32Array(new Uint32Array([(bits & 0xffff) << 16]).buffer)[0]!;
}

/** max |a - b| / max(1, max |b|). */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let scale = 1,
    err = 0;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]!));
  for (let i = 0; i < b.length; i++) err = Math.max(err, Math.abs(a[i]! - b[i]!));
  return Number.isNaN(err) ? Infinity : err / scale;
}
