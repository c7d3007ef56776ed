// pootc: compiles kernel DSL sources (TypeScript modules exporting kernels) into canonical .kir.json assets.
// Each source is bundled with esbuild (conditions: source), imported, and its Kernel exports serialized.
// esbuild is an optional peer dependency (decision 1904), loaded on the first compile: installing
// @poot/kernel-dsl to run kernels does not pull a 22 MB bundler in.

import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { PootcError } from "./errors.js";
import type { Kernel } from "./ir.js";
import { toKirJson } from "./json.js";
import { assertValidKernel } from "./validate.js";

/** One compiled kernel. */
export interface PootcOutput {
  /** Source file, relative to the source directory. */
  readonly source: string;
  readonly kernel: string;
  /** Asset file name (`<kernel>.kir.json`). */
  readonly asset: string;
  /** The .kir.json text. */
  readonly text: string;
}

/** Options of `compileKernelSources`. */
export interface PootcOptions {
  /** Directory to write `<kernel>.kir.json` into; omitted = compile only (nothing written). */
  readonly outDir?: string;
  /** Resolve conditions for imports (default `["source"]`, so workspace packages run from sources). */
  readonly conditions?: readonly string[];
}

type Build = typeof import("esbuild")["build"];

let esbuildBuild: Build | undefined;

/** esbuild's `build`, imported on first use; a missing esbuild is a one-line PootcError saying what to install. */
async function loadEsbuild(): Promise<Build> {
  if (esbuildBuild !== undefined) return esbuildBuild;
  try {
    esbuildBuild = (await import("esbuild")).build;
  } catch (e) {
    // Node: ERR_MODULE_NOT_FOUND "Cannot find package 'esbuild' imported from …"; anything else is esbuild's own.
    if ((e as { code?: unknown }).code !== "ERR_MODULE_NOT_FOUND" || !String(e).includes("'esbuild'")) throw e;
    throw new PootcError(
      "missing_esbuild",
      "pootc needs esbuild to bundle kernel sources, and it is not installed: npm install --save-dev esbuild",
    );
  }
  return esbuildBuild;
}

function isKernel(v: unknown): v is Kernel {
  return v !== null && typeof v === "object" && "name" in v && "body" in v && "workgroupSize" in v && "buffers" in v;
}

async function sourcesIn(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourcesIn(p)));
    else if (/\.(ts|mts|js|mjs)$/.test(entry.name) && !/\.(test|d)\.[mc]?[tj]s$/.test(entry.name)) out.push(p);
  }
  return out.sort();
}

/**
 * Compiles every DSL source under `srcDir` (recursively; `*.test.ts` and `*.d.ts` skipped). Every export that
 * is a Kernel (or an array of Kernels) becomes `<kernel.name>.kir.json`. Kernel names must be unique.
 * Returns the outputs sorted by kernel name; writes them to `outDir` when given.
 */
export async function compileKernelSources(srcDir: string, options: PootcOptions = {}): Promise<PootcOutput[]> {
  const root = resolve(srcDir);
  const files = await sourcesIn(root);
  if (files.length === 0) throw new PootcError("no_sources", `no kernel sources in ${root}`);
  const build = await loadEsbuild();
  const tmp = await mkdtemp(join(tmpdir(), "pootc-"));
  const outputs: PootcOutput[] = [];
  const seen = new Map<string, string>();
  try {
    for (const [n, file] of files.entries()) {
      const rel = relative(root, file);
      const bundled = join(tmp, `m${n}.mjs`);
      try {
        await build({
          entryPoints: [file],
          bundle: true,
          platform: "node",
          format: "esm",
          target: "node20",
          outfile: bundled,
          conditions: [...(options.conditions ?? ["source"])],
          logLevel: "silent",
          external: ["esbuild"],
        });
      } catch (e) {
        throw new PootcError("bundle_failed", (e as Error).message, rel);
      }
      const mod = (await import(pathToFileURL(bundled).href)) as Record<string, unknown>;
      for (const [exportName, value] of Object.entries(mod)) {
        const kernels = Array.isArray(value) && value.every(isKernel) ? value : isKernel(value) ? [value] : [];
        if (
          kernels.length === 0 &&
          Array.isArray(value) === false &&
          value !== null &&
          typeof value === "object" &&
          "body" in value
        ) {
          throw new PootcError("bad_export", `export ${exportName} looks like a kernel but is incomplete`, rel);
        }
        for (const k of kernels) {
          assertValidKernel(k);
          const prev = seen.get(k.name);
          if (prev !== undefined)
            throw new PootcError("duplicate_kernel", `kernel ${k.name} is also exported by ${prev}`, rel);
          seen.set(k.name, rel);
          outputs.push({ source: rel, kernel: k.name, asset: `${k.name}.kir.json`, text: toKirJson(k) });
        }
      }
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  outputs.sort((a, b) => (a.kernel < b.kernel ? -1 : a.kernel > b.kernel ? 1 : 0));
  if (options.outDir !== undefined) {
    await mkdir(options.outDir, { recursive: true });
    for (const o of outputs) await writeFile(join(options.outDir, o.asset), o.text);
  }
  return outputs;
}

/**
 * Compares freshly compiled outputs with the assets in `assetsDir`: returns the asset names that are
 * missing, differ byte-for-byte, or are stale (a .kir.json with no kernel). Empty = up to date.
 */
export async function checkKernelAssets(outputs: readonly PootcOutput[], assetsDir: string): Promise<string[]> {
  const problems: string[] = [];
  const existing = new Set(
    (await readdir(assetsDir).catch(() => [] as string[])).filter((f) => f.endsWith(".kir.json")),
  );
  for (const o of outputs) {
    const text = await readFile(join(assetsDir, o.asset), "utf8").catch(() => undefined);
    if (text === undefined) problems.push(`${o.asset} (missing)`);
    else if (text !== o.text) problems.push(`${o.asset} (differs)`);
    existing.delete(o.asset);
  }
  for (const stale of existing) problems.push(`${stale} (no kernel exports it)`);
  return problems.sort();
}

/** The `pootc` command line: `pootc SRC_DIR --out ASSETS_DIR [--check]`. Returns the exit code. */
export async function pootcMain(argv: readonly string[], log: (line: string) => void = console.log): Promise<number> {
  const src = argv.find((a, i) => !a.startsWith("--") && argv[i - 1] !== "--out");
  const outIdx = argv.indexOf("--out");
  const out = outIdx >= 0 ? argv[outIdx + 1] : undefined;
  const check = argv.includes("--check");
  if (src === undefined || out === undefined) {
    log("usage: pootc SRC_DIR --out ASSETS_DIR [--check]");
    return 2;
  }
  const outputs = await compileKernelSources(src, check ? {} : { outDir: out });
  if (check) {
    const problems = await checkKernelAssets(outputs, out);
    for (const p of problems) log(`out of date: ${p}`);
    return problems.length === 0 ? 0 : 1;
  }
  for (const o of outputs) log(`${o.source} -> ${join(out, o.asset)}`);
  return 0;
}
