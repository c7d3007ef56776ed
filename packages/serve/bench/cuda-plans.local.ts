import { readFileSync } from "node:fs";
import { compile, makeTarget } from "@poot/graph-plan";
import { parseHFConfig, traceModel } from "@poot/models";
import { planKernel, synthCapsFrom } from "@poot/kernelgen";
import { configWeights } from "../src/commands/config-weights.js";
const file = process.argv[2]!, tokens = Number(process.argv[3] ?? 1);
const cfg = parseHFConfig(JSON.parse(readFileSync(file, "utf8")), file);
const g = traceModel(cfg, configWeights(cfg, "BF16", file), { kind: "decode", context: 144, tokens });
const caps = { maxWorkgroupSize: 1024, maxWorkgroupDims: [1024, 1024, 64] as [number, number, number], maxGrid: [2 ** 31 - 1, 65535, 65535] as [number, number, number], sharedBytes: 49152, subgroupSize: 32, maxStorageBuffers: 512, maxBindingBytes: 2 ** 40, bindingAlignment: 16, dtypes: { f16: true, bf16: true }, matrixShapes: [], computeUnits: 132 };
const p = compile(g, makeTarget({ kind: "cuda", caps }), { contractionEpilogues: (process.argv[4] ?? "any") as "any" });
const synth = synthCapsFrom(caps);
p.plans().forEach((pl, i) => {
  if (pl.kernel.provenance === "none" || pl.phase !== "step") return;
  const k = planKernel(pl.kernel, synth, `p${i}`);
  const req = pl.kernel.request as unknown as Record<string, unknown>;
  const ins = (req.inputs as { root: number }[]).map((x) => { const v = p.graph.values[x.root]!; return `${JSON.stringify(v.dtype)}${JSON.stringify(v.shape)}`; }).join(" ");
  if (i < 24 || i > p.plans().length - 6) console.log(i, pl.op, req.kind, "grid", k.grid.join("x"), "wg", k.kernel.workgroupSize.join("x"), "|", ins, "| fallback", k.fallback ?? "");
});
