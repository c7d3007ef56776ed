// The CUDA benches' JSON writer on recorded H200 output (no GPU here): the greedy call's `poot bench --json` files and
// its transformers anchor, a layout call's bench.jsonl and gpu-check.json become `poot-bench-result/1` records that
// pass the JSON Schema (ajv) and carry the figures the raw files hold; planted faults are refused.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { benchResultSchemaErrors, readBenchResult, REPO_ROOT, writeBenchResult } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import {
  cudaBenchInput,
  ggufFormatOf,
  parseAnchorLines,
  parseBenchLines,
  parseReport,
} from "../tools/cuda-bench-result.js";
import { gpuCheckInput } from "../tools/gpu-check-result.js";

const RAW = path.join(REPO_ROOT, "packages", "backend-cuda", "bench-results");
const raw = (f: string): string => fs.readFileSync(path.join(RAW, f), "utf8");
const rawJson = (f: string): Record<string, unknown> => JSON.parse(raw(f));

function greedyInput() {
  const runs = [
    ...parseBenchLines(
      `BENCH new bf16 ${raw("h200-2026-12-02-greedy-bf16-device-loop.json").replace(/\n/g, " ")}`,
      "n",
    ),
    ...parseBenchLines(`BENCH main bf16 ${raw("h200-2026-12-02-greedy-bf16-main.json").replace(/\n/g, " ")}`, "m"),
  ];
  const anchors = parseAnchorLines(raw("h200-2026-12-02-greedy-anchor.jsonl"), "greedy-anchor.jsonl");
  return cudaBenchInput(runs, anchors, {
    name: "cuda-greedy",
    title: "t",
    commit: "205de87",
    command: "poot bench /tmp/l1b --backend cuda --json",
    date: "2026-12-02T08:33:00.000Z",
    hfFormat: "bf16",
  });
}

function inTmp<T>(fn: (dir: string) => T): T {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "poot-cuda-bench-"));
  try {
    return fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe("CUDA bench results", () => {
  test("the greedy call: device loop and main against transformers, figures as recorded, schema-valid", () => {
    const file = inTmp((dir) => {
      const f = writeBenchResult(greedyInput(), dir);
      return { name: path.basename(f), result: readBenchResult(f), json: JSON.parse(fs.readFileSync(f, "utf8")) };
    });
    expect(file.name).toBe("2026-12-02-cuda-greedy.json");
    expect(benchResultSchemaErrors(file.json)).toEqual([]);
    const loop = rawJson("h200-2026-12-02-greedy-bf16-device-loop.json");
    const [newCase, mainCase] = file.result.cases;
    expect(newCase!.id).toBe("cuda-bf16-new-device-loop-p16g128");
    expect(newCase!.backend).toBe("cuda");
    expect(newCase!.metrics["decodeTokS"]!.median).toBe(loop["decodeTokS"]);
    expect(newCase!.metrics["dispatchesPerToken"]!.median).toBe(loop["decodeDispatchesPerToken"]);
    expect(newCase!.metrics["graphLaunchesPerToken"]!.median).toBe(loop["graphLaunchesPerToken"]);
    const anchor = JSON.parse(raw("h200-2026-12-02-greedy-anchor.jsonl").split("\n")[0]!);
    expect(anchor.anchor).toBe("transformers-compiled-loop");
    expect(newCase!.anchor).toBe("transformers-compiled-loop");
    expect(newCase!.anchorMetrics["decodeTokS"]!.runs).toEqual(anchor.decodeTokSRuns);
    expect(newCase!.ratios["decodeTokS"]).toBeCloseTo((loop["decodeTokS"] as number) / anchor.decodeTokS, 12);
    expect(mainCase!.metrics["graphLaunchesPerToken"]).toBeUndefined(); // main's CLI did not count launches
    expect(file.result.notes.join(" ")).toMatch(/transformers-eager .* not charted.*89\.3 tok\/s/);
  });

  test("the committed bench-results/2026-12-02-cuda-greedy.json is what the writer makes of the raw files", () => {
    const committed = readBenchResult(path.join(REPO_ROOT, "bench-results", "2026-12-02-cuda-greedy.json"));
    const made = greedyInput();
    expect(committed.cases).toEqual(made.cases);
    expect(committed.anchors).toEqual(made.anchors);
    expect(committed.machine.device).toMatch(/^NVIDIA H200/);
  });

  test("bench.jsonl lines (empty labels, extra flags) group into cases with every process as a run", () => {
    const runs = parseBenchLines(raw("h200-2026-12-02-layout-bench.jsonl"), "layout-bench.jsonl");
    expect(runs.length).toBe(
      raw("h200-2026-12-02-layout-bench.jsonl")
        .split("\n")
        .filter((l) => /^BENCH /.test(l)).length,
    );
    const input = cudaBenchInput(runs, [], {
      name: "cuda-layout",
      title: "t",
      commit: "abc1234",
      command: "c",
      hfFormat: "bf16",
    });
    const basePres = input.cases.find((c) => c.id === "cuda-bf16-base-pres-p16g128")!;
    const rawRates = runs.filter((r) => r.variant === "base-pres").map((r) => r.json["decodeTokS"]);
    expect(basePres.metrics["decodeTokS"]!.runs).toEqual(rawRates);
    inTmp((dir) => expect(benchResultSchemaErrors(readBenchResult(writeBenchResult(input, dir)))).toEqual([]));
  });

  test("gpu-check.json: graph replay against plain launches, GEMVs against the copy bandwidth", () => {
    const check = rawJson("h200-2026-11-29.json");
    const load = { start: 0, end: 0, min: 0, max: 0 };
    const input = gpuCheckInput(check, {
      commit: "f6eea87",
      command: "node .gpu/gpu-check.mjs",
      load,
      date: "2026-11-29T15:31:13.498Z",
    });
    const launch = input.cases.find((c) => c.id === "launch-graph-replay")!;
    const lo = check["launch-overhead"] as Record<string, number>;
    expect(launch.ratios["usPerKernel"]).toBeCloseTo(lo["graphWallUsPerKernel"]! / lo["plainHostUsPerLaunch"]!, 12);
    const gemvs = Object.entries(check)
      .filter(([k]) => k.startsWith("gemv-"))
      .flatMap(([, v]) => v as unknown[]);
    expect(input.cases.filter((c) => c.anchor === "copy").length).toBe(gemvs.length);
    inTmp((dir) => expect(benchResultSchemaErrors(readBenchResult(writeBenchResult(input, dir)))).toEqual([]));
  });

  test("planted faults: a non-CUDA run, an unreadable anchor line, an invalid record", () => {
    const cpu = `BENCH new bf16 ${JSON.stringify({ ...rawJson("h200-2026-12-02-greedy-bf16-main.json"), backend: "cpu" })}`;
    expect(() => cudaBenchInput(parseBenchLines(cpu, "x"), [], greedyOpts())).toThrow(
      /new bf16: backend is "cpu", not cuda/,
    );
    expect(() => parseAnchorLines('{"tok": 3}\n', "a.jsonl")).toThrow(/^a\.jsonl:1: neither an hf-anchor\.py line/);
    expect(() => parseBenchLines("BENCH new bf16 {not json", "b.jsonl")).toThrow(/^b\.jsonl:1: not JSON/);
    const bad = JSON.parse(JSON.stringify(greedyInput()));
    bad.cases[0].metrics.decodeTokS.unit = "";
    inTmp((dir) => {
      expect(() => writeBenchResult(bad, dir)).toThrow(/decodeTokS/);
      expect(fs.readdirSync(dir)).toEqual([]);
    });
    expect(ggufFormatOf("/tmp/gguf/llama-3.2-1b-random-Q4_K_M.gguf")).toBe("Q4_K_M");
    expect(ggufFormatOf("/tmp/l1b")).toBeNull();
  });

  test("gpu-apis-h200 reports (vulkan, wgpu): the committed gpu-apis-1b record is what the writer makes of them", () => {
    const dir = path.join(REPO_ROOT, "packages", "backend-vulkan", "bench-results");
    const runs = ["grouped", "shared-epilogue"].flatMap((mode) =>
      ["vulkan", "wgpu"].flatMap((b) => {
        const f = `h200-2026-12-01-r3-${mode}-gpu-apis-h200-${b}.json`;
        return parseReport(fs.readFileSync(path.join(dir, f), "utf8"), f, mode);
      }),
    );
    const opts = { name: "gpu-apis-1b", title: "t", commit: "51a09e6", command: "c", hfFormat: "bf16" };
    expect(() => cudaBenchInput(runs, [], opts)).toThrow(/backend is "vulkan", not cuda/);
    const input = cudaBenchInput(runs, [], { ...opts, backends: ["vulkan", "wgpu"] });
    const report = JSON.parse(
      fs.readFileSync(path.join(dir, "h200-2026-12-01-r3-grouped-gpu-apis-h200-vulkan.json"), "utf8"),
    );
    const grouped = input.cases.find((c) => c.id === "vulkan-bf16-grouped-p128g64")!;
    expect(grouped.backend).toBe("vulkan");
    expect(grouped.metrics["decodeTokS"]!.median).toBe(report.bench.vulkan.decodeTokS);
    expect(grouped.metrics["dispatchesPerToken"]!.median).toBe(report.bench.vulkan.decodeDispatchesPerToken);
    const committed = readBenchResult(path.join(REPO_ROOT, "bench-results", "2026-12-01-gpu-apis-1b.json"));
    expect(committed.cases).toEqual(input.cases);
    expect(() => parseReport("{}", "r.json", "x")).toThrow(/^r\.json: no "bench" object/);
  });
});

function greedyOpts() {
  return { name: "x", title: "t", commit: "abc1234", command: "c", hfFormat: "bf16" };
}
