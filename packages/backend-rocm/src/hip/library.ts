// Finding libamdhip64: the caller's ROCm root (the CLI passes ROCM_PATH; libraries never read env), then the
// standard /opt/rocm, then the dynamic loader's own search (ldconfig names). The first that loads wins; when none
// does, `no_runtime` names every path tried.

import koffi from "koffi";
import { RocmError } from "../errors.js";

/** Options for locating the HIP runtime. */
export interface HipLibraryOptions {
  /** A ROCm installation root (e.g. the value of ROCM_PATH); `<root>/lib/libamdhip64.so` is tried first. */
  readonly rocmPath?: string;
  /** An explicit library path, tried before everything else. */
  readonly library?: string;
}

/** The candidate library paths, in the order they are tried. */
export function hipLibraryCandidates(options: HipLibraryOptions = {}): string[] {
  const out: string[] = [];
  if (options.library !== undefined) out.push(options.library);
  if (options.rocmPath !== undefined) out.push(`${options.rocmPath.replace(/\/+$/, "")}/lib/libamdhip64.so`);
  out.push("/opt/rocm/lib/libamdhip64.so");
  // Bare sonames: the dynamic loader's search (ld.so.cache from ldconfig, LD_LIBRARY_PATH).
  out.push("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5");
  return [...new Set(out)];
}

/**
 * Loads the first candidate of {@link hipLibraryCandidates} that the dynamic loader accepts. Throws
 * `RocmError("no_runtime")` with a one-line message naming the paths tried when none loads.
 */
export function loadHipLibrary(options: HipLibraryOptions = {}): { lib: ReturnType<typeof koffi.load>; path: string } {
  const tried = hipLibraryCandidates(options);
  for (const path of tried) {
    try {
      return { lib: koffi.load(path), path };
    } catch {
      // Not there or not loadable: try the next candidate.
    }
  }
  throw new RocmError(
    "no_runtime",
    `no ROCm runtime: libamdhip64 not found (tried ${tried.join(", ")}); install ROCm or set ROCM_PATH`,
    { tried },
  );
}
