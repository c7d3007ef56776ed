// The node platform's native kernels: the prebuilt object for this OS and architecture, shipped in the package
// (native/prebuilt/<platform>-<arch>/), loaded through koffi; null where none ships or (x86-64) the CPU lacks AVX2, FMA
// and F16C. The linux-arm64 object (NEON) is built and linked here but has not run on an arm64 machine (decision 2310).

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CpuError } from "../errors.js";
import type { NativeLibrary } from "./library.js";
import { nativeKernels } from "../thread/native.js";

/** The object of each platform (generated from the kernel IR, decisions 2300 and 2310). */
const LIBRARIES: Readonly<Record<string, string>> = { "linux-x64": "libpoot_cpu.so", "linux-arm64": "libpoot_cpu.so" };

/** The prebuilt object for `platform-arch` next to this module (src/native or dist), or null. */
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

/** Loads the prebuilt kernels once per process (null where there are none, or the CPU cannot run them). */
export function loadNodeNative(): NativeLibrary | null {
  if (loaded === undefined) loaded = openLibrary();
  return loaded;
}

function openLibrary(): NativeLibrary | null {
  const path = prebuiltPath(process.platform, process.arch);
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
  // The integer dot-product kernels (decision 2320): AVX-512 VNNI code where the CPU has it, else their AVX2 fallback.
  const fast = kernels.has("poot_quant_q8_0");
  const vnni = fast && lib.func("int poot_native_vnni(void)")() === 1;
  const isaOf = lib.func("const char *poot_native_isa(void)");
  return {
    path,
    koffi: koffiPath,
    sourceHash,
    fast,
    vnni,
    get isa() {
      return isaOf() as string;
    },
    force: (want) => force(want) === 1,
    kernels,
    hostKernel: nativeKernels(require),
    address: (view) => Number(addr(view)),
  };
}
