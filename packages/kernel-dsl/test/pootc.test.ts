// pootc regenerates the committed example assets byte-for-byte, and every asset parses back to the DSL kernel.

import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { PootcError, parseKirJson } from "@poot/kernel-dsl";
import { checkKernelAssets, compileKernelSources, pootcMain } from "@poot/kernel-dsl/pootc";
import * as reductions from "./fixtures/kernels/reductions.js";
import * as elementwise from "./fixtures/kernels/elementwise.js";

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, "fixtures/kernels");
const assetsDir = join(here, "fixtures/assets");

describe("pootc", () => {
  it("regenerates every committed asset byte-for-byte (and no stale ones exist)", async () => {
    const outputs = await compileKernelSources(srcDir);
    expect(outputs.map((o) => o.kernel)).toEqual([
      "bf16_unpack_repack",
      "gemv_f32",
      "gemv_f32_missing_barrier",
      "histogram",
      "rowsum_subgroup",
    ]);
    const committed = (await readdir(assetsDir)).sort();
    expect(committed).toEqual(outputs.map((o) => o.asset));
    for (const o of outputs) expect(o.text).toBe(await readFile(join(assetsDir, o.asset), "utf8"));
    expect(await checkKernelAssets(outputs, assetsDir)).toEqual([]);
  }, 30_000);

  it("each asset parses back to exactly the kernel the DSL module exports", async () => {
    const byName = new Map(Object.values({ ...reductions, ...elementwise }).map((k) => [k.name, k]));
    for (const file of await readdir(assetsDir)) {
      const parsed = parseKirJson(await readFile(join(assetsDir, file), "utf8"), file);
      expect(parsed).toEqual(byName.get(parsed.name));
    }
  });

  it("writes with --out, and --check flags a modified asset", async () => {
    const out = await mkdtemp(join(tmpdir(), "pootc-test-"));
    try {
      const lines: string[] = [];
      expect(await pootcMain([srcDir, "--out", out], (l) => lines.push(l))).toBe(0);
      expect(lines).toHaveLength(5);
      expect(await pootcMain([srcDir, "--out", out, "--check"], () => {})).toBe(0);
      await writeFile(join(out, "histogram.kir.json"), "{}\n");
      const problems: string[] = [];
      expect(await pootcMain([srcDir, "--out", out, "--check"], (l) => problems.push(l))).toBe(1);
      expect(problems).toEqual(["out of date: histogram.kir.json (differs)"]);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 30_000);

  it("rejects an empty source directory with a typed error", async () => {
    const empty = await mkdtemp(join(tmpdir(), "pootc-empty-"));
    try {
      await expect(compileKernelSources(empty)).rejects.toThrow(PootcError);
      await expect(compileKernelSources(empty)).rejects.toMatchObject({ code: "no_sources" });
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
