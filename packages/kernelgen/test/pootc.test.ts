// The committed assets are exactly what pootc makes of kernels/*.ts today (byte-for-byte, none stale), and the
// library's loader returns the same kernels the DSL sources export.

import { readFile, readdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkKernelAssets, compileKernelSources } from "@poot/kernel-dsl/pootc";
import { IMPORTED_KERNELS, KernelgenError, importedKernel } from "@poot/kernelgen";
import type { ImportedKernelName } from "@poot/kernelgen";
import * as argmax from "../kernels/argmax.js";
import * as convert from "../kernels/convert.js";
import * as gather from "../kernels/gather.js";
import * as gemm from "../kernels/gemm.js";
import * as gemv from "../kernels/gemv.js";
import * as random from "../kernels/random.js";
import * as samplers from "../kernels/samplers.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

describe("imported kernel assets", () => {
  it("pootc regenerates every asset byte-for-byte and none is stale", async () => {
    const outputs = await compileKernelSources(join(root, "kernels"));
    expect(outputs.map((o) => o.kernel)).toEqual([...IMPORTED_KERNELS]);
    const committed = (await readdir(join(root, "assets"))).filter((f) => f.endsWith(".kir.json")).sort();
    expect(committed).toEqual(outputs.map((o) => o.asset));
    for (const o of outputs) expect(o.text).toBe(await readFile(join(root, "assets", o.asset), "utf8"));
    expect(await checkKernelAssets(outputs, join(root, "assets"))).toEqual([]);
  }, 60_000);

  it("importedKernel loads each asset as the kernel its source exports", () => {
    const sources = new Map(
      Object.values({ ...argmax, ...convert, ...gather, ...gemm, ...gemv, ...random, ...samplers }).map((k) => [
        k.name,
        k,
      ]),
    );
    for (const name of IMPORTED_KERNELS) expect(importedKernel(name)).toEqual(sources.get(name));
  });

  it("an unknown name is a typed error", () => {
    expect(() => importedKernel("nope" as ImportedKernelName)).toThrow(KernelgenError);
    expect(() => importedKernel("nope" as ImportedKernelName)).toThrow(
      expect.objectContaining({ code: "unknown_kernel" }),
    );
  });
});
