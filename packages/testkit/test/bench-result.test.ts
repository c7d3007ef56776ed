// The benchmark result files: a written result reads back the same, every committed file of bench-results/ passes the
// schema, and each planted fault (wrong schema, a case naming an anchor that is absent, a repeated id, a run that is
// not a number, a missing field) is refused with a one-line message naming the file and the field. The JSON Schema
// (checked with ajv) passes every committed file and refuses planted invalid records.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import {
  BENCH_RESULT_JSON_SCHEMA_FILE,
  BENCH_RESULTS_DIR,
  benchResultSchemaErrors,
  BenchResultError,
  figure,
  loadSampler,
  ratiosOf,
  readBenchResult,
  readBenchResults,
  validateBenchResult,
  writeBenchResult,
  type BenchResultInput,
} from "@poot/testkit";

function input(): BenchResultInput {
  const metrics = { decodeTokS: figure([10, 12, 11], "tok/s"), dispatchesPerToken: figure([212], "dispatches/token") };
  const anchorMetrics = { decodeTokS: figure([20, 22, 21], "tok/s") };
  return {
    name: "unit-test",
    title: "a result written by the test",
    load: loadSampler().summary(),
    settings: { threads: 2 },
    anchors: [{ id: "llama.cpp", name: "llama.cpp (test)" }],
    cases: [
      {
        id: "cpu-Q8_0-exact",
        label: "poot cpu Q8_0",
        backend: "cpu",
        format: "Q8_0",
        numerics: "exact",
        model: "m.gguf",
        metrics,
        anchor: "llama.cpp",
        anchorMetrics,
        ratios: ratiosOf(metrics, anchorMetrics),
      },
    ],
    notes: [],
  };
}

describe("bench results", () => {
  test("figure: the median of the runs, runs kept in order; ratios: case median over anchor median", () => {
    expect(figure([3, 1, 2], "tok/s")).toEqual({ median: 2, runs: [3, 1, 2], unit: "tok/s" });
    expect(figure([4, 1, 3, 2], "ms").median).toBe(2.5);
    const r = ratiosOf({ a: figure([6], "x"), b: figure([1], "x") }, { a: figure([3], "x") });
    expect(r).toEqual({ a: 2 });
  });

  test("a written result reads back the same, named <date>-<name>.json, with date, commit, machine and command", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "poot-bench-results-"));
    try {
      const file = writeBenchResult(input(), dir);
      expect(path.basename(file)).toMatch(/^\d{4}-\d{2}-\d{2}-unit-test\.json$/);
      const back = readBenchResult(file);
      expect(back.cases).toEqual(input().cases);
      expect(back.commit).toMatch(/^([0-9a-f]{40}(-dirty)?|unknown)$/);
      expect(back.machine.cores).toBe(os.cpus().length);
      expect(back.command).toMatch(/^node /);
      expect(readBenchResults(dir).map((r) => r.file)).toEqual([path.basename(file)]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("every committed file of bench-results/ passes the schema", () => {
    const all = readBenchResults(BENCH_RESULTS_DIR);
    for (const { file, result } of all) {
      expect(file.startsWith(result.date.slice(0, 10)), file).toBe(true);
      expect(file.endsWith(`-${result.name}.json`), file).toBe(true);
    }
  });

  test("planted faults are refused with the file and the field named", () => {
    const good = JSON.parse(
      JSON.stringify({ ...input(), schema: "poot-bench-result/1", date: new Date().toISOString() }),
    );
    Object.assign(good, { commit: "abc", command: "node x", machine: { cpu: "c", cores: 2 } });
    expect(() => validateBenchResult(good, "f.json")).not.toThrow();
    const plant = (edit: (x: any) => void) => {
      const x = JSON.parse(JSON.stringify(good));
      edit(x);
      return () => validateBenchResult(x, "f.json");
    };
    expect(plant((x) => (x.schema = "other/1"))).toThrow(/^f\.json: schema is "other\/1"/);
    expect(plant((x) => (x.cases[0].anchor = "nobody"))).toThrow(/f\.json: cases\[0\]\.anchor: "nobody" is not/);
    expect(plant((x) => x.cases.push(x.cases[0]))).toThrow(/cases\[1\]: id "cpu-Q8_0-exact" repeats/);
    expect(plant((x) => (x.cases[0].metrics.decodeTokS.runs[1] = "fast"))).toThrow(
      /cases\[0\]\.metrics\.decodeTokS\.runs: not all numbers/,
    );
    expect(plant((x) => delete x.load)).toThrow(/f\.json: load needs/);
    expect(plant((x) => (x.cases = []))).toThrow(/cases must be a non-empty list/);
    expect(() => writeBenchResult({ ...input(), name: "Bad Name" }, os.tmpdir())).toThrow(BenchResultError);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "poot-bench-results-"));
    try {
      fs.writeFileSync(path.join(dir, "2026-01-01-x.json"), "{not json");
      expect(() => readBenchResults(dir)).toThrow(/2026-01-01-x\.json: not JSON/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the JSON Schema (ajv) passes every committed file and refuses a planted invalid record", () => {
    expect(fs.existsSync(BENCH_RESULT_JSON_SCHEMA_FILE)).toBe(true);
    const files = fs.readdirSync(BENCH_RESULTS_DIR).filter((f) => f.endsWith(".json"));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const x = JSON.parse(fs.readFileSync(path.join(BENCH_RESULTS_DIR, f), "utf8"));
      expect(benchResultSchemaErrors(x), f).toEqual([]);
    }
    const good = JSON.parse(fs.readFileSync(path.join(BENCH_RESULTS_DIR, files[0]!), "utf8"));
    const plant = (edit: (x: any) => void): string[] => {
      const x = JSON.parse(JSON.stringify(good));
      edit(x);
      return benchResultSchemaErrors(x);
    };
    expect(plant(() => {})).toEqual([]);
    expect(plant((x) => (x.cases[0].metrics[Object.keys(x.cases[0].metrics)[0]!].runs = []))).toEqual([
      expect.stringMatching(/^\/cases\/0\/metrics\/\w+\/runs must NOT have fewer than 1 items/),
    ]);
    expect(plant((x) => (x.cases[0].backend = 3)).join("\n")).toMatch(/\/cases\/0\/backend must be string,null/);
    expect(plant((x) => (x.date = "yesterday")).join("\n")).toMatch(/\/date must match pattern/);
    expect(plant((x) => (x.cases[0].speed = 1)).join("\n")).toMatch(/\/cases\/0 must NOT have additional properties/);
    // The writer refuses what the schema refuses (validateBenchResult runs it last), so no bench writes such a file.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "poot-bench-results-"));
    try {
      expect(() => writeBenchResult({ ...input(), date: "2026-12-02 08:33" }, dir)).toThrow(/date/);
      const bad = input();
      (bad.cases[0] as any).speed = 1;
      expect(() => writeBenchResult(bad, dir)).toThrow(/cases\/0 must NOT have additional properties \(JSON Schema/);
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
