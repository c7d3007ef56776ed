// Writes a `poot-bench-result/1` file from a GPU bench call's raw output (bundled by gpu-bundle.sh as
// .gpu/cuda-bench-result.mjs; run on the GPU machine at the end of a call, or here over a fetched call's files).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type BenchMachine, benchMachine, writeBenchResult } from "@poot/testkit";
import {
  type AnchorRun,
  CudaBenchResultError,
  cudaBenchInput,
  parseAnchorLines,
  parseBenchLines,
  parseReport,
  type PootBenchRun,
} from "./cuda-bench-result.js";

const USAGE = `usage: cuda-bench-result --name NAME --title TEXT --commit SHA --out DIR
  [--bench bench.jsonl]... [--json VARIANT:LABEL:FILE]... [--report VARIANT:FILE]... [--anchors FILE]...
  [--backend cuda]... [--hf-format bf16]
  [--command TEXT] [--date ISO] [--device TEXT] [--machine machine.json] [--note TEXT]...
--bench: "BENCH <variant> <label> <json>" lines (gpu-ab.sh); --json: one \`poot bench --json\` output; --report: a
gpu-apis-h200 report (vulkan, wgpu: pass --backend vulkan --backend wgpu); --anchors:
hf-anchor.py or \`llama-bench -o jsonl\` lines. --machine: a JSON object of the machine that ran it (default: this one,
with --device).`;

function main(): void {
  const { values } = parseArgs({
    options: {
      name: { type: "string" },
      title: { type: "string" },
      commit: { type: "string" },
      out: { type: "string" },
      bench: { type: "string", multiple: true, default: [] },
      json: { type: "string", multiple: true, default: [] },
      anchors: { type: "string", multiple: true, default: [] },
      report: { type: "string", multiple: true, default: [] },
      backend: { type: "string", multiple: true, default: ["cuda"] },
      "hf-format": { type: "string", default: "bf16" },
      command: { type: "string" },
      date: { type: "string" },
      device: { type: "string" },
      machine: { type: "string" },
      note: { type: "string", multiple: true, default: [] },
    },
  });
  const { name, title, commit, out } = values;
  if (name === undefined || title === undefined || commit === undefined || out === undefined)
    throw new CudaBenchResultError(`--name, --title, --commit and --out are required\n${USAGE}`);
  const read = (f: string): string => {
    try {
      return readFileSync(f, "utf8");
    } catch (e) {
      throw new CudaBenchResultError(`${f}: cannot read (${(e as NodeJS.ErrnoException).code ?? "error"})`);
    }
  };
  const runs: PootBenchRun[] = values.bench.flatMap((f) => parseBenchLines(read(f), f));
  for (const spec of values.json) {
    const m = /^([^:]+):([^:]+):(.+)$/.exec(spec);
    if (m === null) throw new CudaBenchResultError(`--json ${spec}: expected VARIANT:LABEL:FILE`);
    runs.push(...parseBenchLines(`BENCH ${m[1]} ${m[2]} ${read(m[3]!).replace(/\n/g, " ")}`, m[3]!));
  }
  for (const spec of values.report) {
    const m = /^([^:]+):(.+)$/.exec(spec);
    if (m === null) throw new CudaBenchResultError(`--report ${spec}: expected VARIANT:FILE`);
    runs.push(...parseReport(read(m[2]!), m[2]!, m[1]!));
  }
  const anchors: AnchorRun[] = values.anchors.flatMap((f) => parseAnchorLines(read(f), f));
  const machine: BenchMachine =
    values.machine === undefined ? benchMachine(values.device) : (JSON.parse(read(values.machine)) as BenchMachine);
  const input = cudaBenchInput(runs, anchors, {
    name,
    title,
    commit,
    command: values.command ?? `node cuda-bench-result ${process.argv.slice(2).join(" ")}`,
    machine,
    hfFormat: values["hf-format"],
    backends: values.backend,
    notes: values.note,
    ...(values.date === undefined ? {} : { date: values.date }),
  });
  console.log(writeBenchResult(input, out));
}

try {
  main();
} catch (e) {
  console.error(`cuda-bench-result: ${(e as Error).message}`);
  process.exit(2);
}
