// The node platform's native kernels: the prebuilt object for this OS and architecture, shipped in the package
// (native/prebuilt/<platform>-<arch>/), loaded through koffi; null where none ships or the CPU lacks AVX2+F16C.

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CpuError } from "../errors.js";
import type { NativeLibrary } from "./library.js";
import { nativeKernels } from "../thread/native.js";

const LIBRARIES: Readonly<Record<string, string>> = { "linux-x64": "libpoot_cpu.so" };

/** The prebuilt object of `platform-arch` next to this module (src/native or dist), or null. */
export function prebuiltPath(platform: string = process.platform, arch: string = process.arch): string | null {
  const file = LIBRARIES[`${platform}-${arch}`];
  if (file === undefined) return null;
  // src/native/*.ts and dist/*.js sit at different depths under the package root.
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++, dir = dirname(dir)) {
    const at = join(dir, "native", "prebuilt", `${platform}-${arch}`, file);
    if (existsSync(at)) return at;
  }
  return null;
}

let loaded: NativeLibrary | null | undefined;

/** Loads the prebuilt kernels once per process (null where there are none, or the CPU lacks AVX2 and F16C). */
export function loadNodeNative(): NativeLibrary | null {
  if (loaded !== undefined) return loaded;
  const path = prebuiltPath();
  if (path === null) return (loaded = null);
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
  const isaOf = lib.func("const char *poot_native_isa(void)");
  const force = lib.func("int poot_native_force(const char *isa)");
  const isa = isaOf() as string;
  if (isa === "none") return (loaded = null);
  const sourceHash = lib.func("const char *poot_native_source_hash(void)")() as string;
  const addr = lib.func("uint64_t poot_native_addr(const void *p)");
  loaded = {
    path,
    koffi: koffiPath,
    sourceHash,
    hostKernel: nativeKernels(require),
    get isa() {
      return isaOf() as string;
    },
    address: (view) => Number(addr(view)),
    force: (want) => force(want) === 1,
  };
  return loaded;
}
