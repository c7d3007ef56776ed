// The imported kernel library: kernels written once in the kernel DSL (kernels/*.ts), compiled by pootc into
// the committed assets/*.kir.json that ship with the package and are loaded (and validated) here on demand.

import { parseKirJson } from "@poot/kernel-dsl";
import type { Kernel } from "@poot/kernel-dsl";
import { KernelgenError } from "./errors.js";

/** Every kernel of the imported library (the asset is `assets/<name>.kir.json`). */
export const IMPORTED_KERNELS = [
  "argmax_chunk",
  "argmax_combine",
  "convert_bf16x2_f32",
  "gather_rows_bf16_f32",
  "gather_rows_packed",
  "gather_rows_q8_0_f32",
  "gemm_tiled_bf16",
  "gemm_tiled_f32",
  "gemv_bf16_kn",
  "gemv_bf16_nk",
  "gemv_f32_kn",
  "gemv_f32_nk",
  "philox_bits",
  "philox_uniform",
  "sample_gumbel",
  "sample_top_k_top_p",
] as const;

/** Name of an imported kernel. */
export type ImportedKernelName = (typeof IMPORTED_KERNELS)[number];

const cache = new Map<string, Kernel>();

/** URL of the assets folder: `../assets` from both src/ (tests, source condition) and dist/ (published). */
function assetUrl(name: string): URL {
  return new URL(`../assets/${name}.kir.json`, import.meta.url);
}

/**
 * The text of `name`'s asset, read from disk. node:fs is reached at run time (`process.getBuiltinModule`), not
 * imported, so that a browser bundle of a package that uses kernelgen's synthesizers pulls in no Node module; there
 * the assets cannot be read and this throws.
 */
function readAsset(name: string): string {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const fs = proc?.getBuiltinModule?.("node:fs") as typeof import("node:fs") | undefined;
  if (fs === undefined) throw new Error("the kernel library's assets are read from disk, which needs Node.js");
  return fs.readFileSync(assetUrl(name), "utf8");
}

/**
 * Loads an imported kernel from its committed `.kir.json` asset (parsed and validated once, then cached).
 * Throws `KernelgenError` `unknown_kernel` for a name not in the library, `bad_asset` if the file is unreadable.
 */
export function importedKernel(name: ImportedKernelName): Kernel {
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  if (!(IMPORTED_KERNELS as readonly string[]).includes(name)) {
    throw new KernelgenError("unknown_kernel", `no imported kernel named ${JSON.stringify(name)}`, {
      synth: "importedKernel",
      value: name,
    });
  }
  let text: string;
  try {
    text = readAsset(name);
  } catch (e) {
    throw new KernelgenError("bad_asset", `cannot read the asset of ${name}: ${(e as Error).message}`, {
      synth: "importedKernel",
      value: name,
    });
  }
  const k = parseKirJson(text, `${name}.kir.json`);
  cache.set(name, k);
  return k;
}

/**
 * The imported kernels whose asset cannot be read or parsed where this module looks (`../assets`), each as
 * `name: reason`; empty when the library is complete. Benches bundled away from the package call it first so
 * that they measure the layout an install has (issue #22: a bundle without the assets synthesized kernels
 * that users never run). Reads the files afresh, bypassing the cache.
 */
export function missingImportedAssets(): string[] {
  const missing: string[] = [];
  for (const name of IMPORTED_KERNELS) {
    try {
      parseKirJson(readAsset(name), `${name}.kir.json`);
    } catch (e) {
      missing.push(`${name}: ${(e as Error).message.split("\n")[0]}`);
    }
  }
  return missing;
}
