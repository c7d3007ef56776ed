// The node platform's native kernels: the prebuilt object for this OS and architecture, shipped in the package
// (native/prebuilt/<platform>-<arch>/), loaded through koffi; null where none ships or the CPU lacks AVX2, FMA and F16C.

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CpuError } from "../errors.js";
import type { NativeLibrary, NativeSource } from "./library.js";
import { nativeKernels } from "../thread/native.js";

/** The objects of each platform, by source (the C build's and the kernel IR's, decision 2300). */
const LIBRARIES: Readonly<Record<string, Readonly<Record<NativeSource, string>>>> = {
  "linux-x64": { c: "libpoot_cpu.so", "kernel-ir": "libpoot_cpu_ir.so" },
};

/** The prebuilt object of `source` for `platform-arch` next to this module (src/native or dist), or null. */
export function prebuiltPath(
  platform: string = process.platform,
  arch: string = process.arch,
  source: NativeSource = "c",
): string | null {
  const file = LIBRARIES[`${platform}-${arch}`]?.[source];
  if (file === undefined) return null;
  // src/native/*.ts and dist/*.js sit at different depths under the package root.
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++, dir = dirname(dir)) {
    const at = join(dir, "native", "prebuilt", `${platform}-${arch}`, file);
    if (existsSync(at)) return at;
  }
  return null;
}

const loaded = new Map<NativeSource, NativeLibrary | null>();

/** Loads the prebuilt kernels of `source` once per process (null where there are none, or the CPU cannot run them). */
export function loadNodeNative(source: NativeSource = "c"): NativeLibrary | null {
  if (loaded.has(source)) return loaded.get(source)!;
  const lib = openLibrary(source);
  loaded.set(source, lib);
  return lib;
}

function openLibrary(source: NativeSource): NativeLibrary | null {
  const path = prebuiltPath(process.platform, process.arch, source);
  if (path === null) return null;
  const require = createRequire(import.meta.url);
  const koffiPath = require.resolve("koffi");
  let lib;
  try {
    lib = (require(koffiPath) as { load(p: string): { func(s: string): (...a: unknown[]) => unknown } }).load(path);
  } catch (e) {
    throw new CpuError(
      "unsupported-platform",
      `the native CPU kernels at ${path} do not load: ${String(e)} (the executor option native: false runs the Wasm kernels)`,
    );
  }
  const isa = lib.func("const char *poot_native_isa(void)")() as string;
  if (isa === "none") return null;
  const sourceHash = lib.func("const char *poot_native_source_hash(void)")() as string;
  const kernels = new Set((lib.func("const char *poot_native_kernels(void)")() as string).split(","));
  const addr = lib.func("uint64_t poot_native_addr(const void *p)");
  // Both libraries have two kernel sets to choose from (AVX2 and AVX-512).
  const force = lib.func("int poot_native_force(const char *isa)");
  const isaOf = lib.func("const char *poot_native_isa(void)");
  return {
    path,
    koffi: koffiPath,
    sourceHash,
    get isa() {
      return isaOf() as string;
    },
    force: (want) => force(want) === 1,
    kernels,
    hostKernel: nativeKernels(require),
    address: (view) => Number(addr(view)),
  };
}
