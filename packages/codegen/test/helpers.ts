// Shared test setup: device caps profiles and locating the lavapipe Vulkan driver for Dawn.
// The ICD path is found on disk (never through environment variables) and passed to the library.

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { DeviceCaps } from "@poot/codegen";

/** A WebGPU device like lavapipe through Dawn: subgroups of 8 (llvmpipe AVX2), 8 storage buffers. */
export const WEBGPU_CAPS: DeviceCaps = {
  maxWorkgroup: 256,
  subgroupSize: 8,
  sharedBytes: 16384,
  dtypes: ["f32", "u32", "i32"],
  maxStorageBuffers: 8,
  f16: false,
  bf16: false,
};
/** An NVIDIA sm_80/sm_90 GPU. */
export const CUDA_CAPS: DeviceCaps = {
  maxWorkgroup: 1024,
  subgroupSize: 32,
  sharedBytes: 49152,
  dtypes: ["f32", "u32", "i32", "f16", "bf16", "u8", "i8"],
  maxStorageBuffers: 64,
  f16: true,
  bf16: true,
};
/** An AMD CDNA GPU (wave64). */
export const AMD_CAPS: DeviceCaps = {
  maxWorkgroup: 1024,
  subgroupSize: 64,
  sharedBytes: 65536,
  dtypes: ["f32", "u32", "i32", "f16", "bf16", "u8", "i8"],
  maxStorageBuffers: 64,
  f16: true,
  bf16: true,
};
/** A Vulkan 1.1 device with 16-bit storage and subgroups of 32. */
export const VULKAN_CAPS: DeviceCaps = {
  maxWorkgroup: 1024,
  subgroupSize: 32,
  sharedBytes: 32768,
  dtypes: ["f32", "u32", "i32", "f16", "bf16"],
  maxStorageBuffers: 16,
  f16: true,
  bf16: false,
};
/** The CPU (Wasm) backend: no subgroups beyond one lane. */
export const WASM_CAPS: DeviceCaps = {
  maxWorkgroup: 1024,
  subgroupSize: 1,
  sharedBytes: 65536,
  dtypes: ["f32", "u32", "i32", "f16", "bf16", "u8", "i8"],
  maxStorageBuffers: 1024,
  f16: false,
  bf16: false,
};

/** lavapipe's ICD manifest as written by .ci/lavapipe-setup, when present. */
export function lavapipeIcd(): string | undefined {
  const p = join(homedir(), ".cache", "lavapipe25", "lvp_icd.json");
  return existsSync(p) ? p : undefined;
}
