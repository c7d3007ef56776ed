// The machine-readable result of a benchmark run: what every `pnpm bench` script that measures decode, prefill or
// dispatches writes to the repository's bench-results/ folder, and what the docs site's benchmark charts read.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { benchResultSchemaErrors } from "./bench-schema.js";
import { REPO_ROOT } from "./root.js";

/** The schema tag every result file carries; a reader refuses any other. */
export const BENCH_RESULT_SCHEMA = "poot-bench-result/1";

/** The folder results are written to (committed; one small JSON file per run). */
export const BENCH_RESULTS_DIR: string = path.join(REPO_ROOT, "bench-results");

/** One measured quantity: every run in the order it was taken, and their median. */
export interface BenchFigure {
  /** Median of `runs`. */
  readonly median: number;
  /** Each run's value, in the order measured. */
  readonly runs: readonly number[];
  /** Unit of the values: "tok/s", "dispatches/token", "requests/s", "ms", ... */
  readonly unit: string;
}

/** Where a run took place. */
export interface BenchMachine {
  /** CPU model as the OS names it. */
  readonly cpu: string;
  /** Logical CPUs. */
  readonly cores: number;
  /** `linux x64`, ... */
  readonly os: string;
  /** Kernel release. */
  readonly kernel: string;
  /** Node version. */
  readonly node: string;
  /** Physical memory, GiB. */
  readonly memoryGiB: number;
  /** An accelerator and its driver, when the run used one. */
  readonly device?: string;
}

/** A baseline measured in the same run (llama.cpp, the unfused program, the sequential server, ...). */
export interface BenchAnchor {
  /** Key the cases refer to. */
  readonly id: string;
  /** What it is, with its version or build, as the bench loaded it. */
  readonly name: string;
  /** Settings that matter for reading its figures (threads, KV cache type, ...). */
  readonly detail?: string;
}

/** One measured configuration and, when it has one, its anchor's figures from the same run. */
export interface BenchCase {
  /** Unique within the file. */
  readonly id: string;
  /** Human-readable name. */
  readonly label: string;
  /** The poot backend that ran it (`cpu`, `cuda`, ...), or null when none applies. */
  readonly backend: string | null;
  /** Weight format (`F16`, `Q8_0`, `Q4_K_M`, `bf16`, ...), or null. */
  readonly format: string | null;
  /** The numerics the backend ran with (`exact`, `fast`), or null where the backend has one. */
  readonly numerics: string | null;
  /** The model file or folder measured (a path or a name). */
  readonly model: string;
  /** The figures, keyed by metric: `decodeTokS`, `prefillTokS`, `dispatchesPerToken`, ... */
  readonly metrics: Readonly<Record<string, BenchFigure>>;
  /** Id of the anchor in {@link BenchResult.anchors}, or null. */
  readonly anchor: string | null;
  /** The anchor's figures for the metrics it shares with this case (same run, interleaved where possible). */
  readonly anchorMetrics: Readonly<Record<string, BenchFigure>>;
  /** metrics[m].median / anchorMetrics[m].median for every metric both have. */
  readonly ratios: Readonly<Record<string, number>>;
}

/** A benchmark run, as written to bench-results/<date>-<name>.json. */
export interface BenchResult {
  readonly schema: typeof BENCH_RESULT_SCHEMA;
  /** Short name of the bench (file name part): `cpu-vs-llama-cpp`, `serve-load`, ... */
  readonly name: string;
  /** One line saying what was measured. */
  readonly title: string;
  /** ISO time the run ended. */
  readonly date: string;
  /** `git rev-parse HEAD` of the checkout, with `-dirty` when it had uncommitted changes (bench-results/ aside). */
  readonly commit: string;
  /** The command that reproduces the run, from the repository root. */
  readonly command: string;
  readonly machine: BenchMachine;
  /** One-minute load averages: at the start, at the end, and the lowest and highest sampled between. */
  readonly load: { readonly start: number; readonly end: number; readonly min: number; readonly max: number };
  /** The bench's settings (threads, prompt and generated tokens, runs, ...). */
  readonly settings: Readonly<Record<string, string | number | boolean | null>>;
  readonly anchors: readonly BenchAnchor[];
  readonly cases: readonly BenchCase[];
  /** What a reader must know to read the figures. */
  readonly notes: readonly string[];
}

/** A result file that is not a {@link BenchResult}: the message names the file and the field. */
export class BenchResultError extends Error {
  override readonly name = "BenchResultError";
}

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new BenchResultError("median of no runs");
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** A {@link BenchFigure} of `runs` in `unit`. */
export function figure(runs: readonly number[], unit: string): BenchFigure {
  return { median: median(runs), runs: [...runs], unit };
}

/** metric -> case median / anchor median, for every metric both have. */
export function ratiosOf(
  metrics: Readonly<Record<string, BenchFigure>>,
  anchor: Readonly<Record<string, BenchFigure>>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, f] of Object.entries(metrics)) {
    const a = anchor[k];
    if (a !== undefined && a.median !== 0) out[k] = f.median / a.median;
  }
  return out;
}

/** This machine, as a result records it. */
export function benchMachine(device?: string): BenchMachine {
  const cpus = os.cpus();
  return {
    cpu: (cpus[0]?.model ?? "unknown").trim(),
    cores: cpus.length,
    os: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    node: process.version,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    ...(device === undefined ? {} : { device }),
  };
}

/**
 * `git rev-parse HEAD` of the repository (`-dirty` appended when tracked files outside bench-results/ changed), or
 * "unknown".
 */
export function gitCommit(): string {
  try {
    const git = (...a: string[]) => execFileSync("git", a, { cwd: REPO_ROOT, encoding: "utf8" }).trim();
    const sha = git("rev-parse", "HEAD");
    // Results being rewritten (bench-results/) are not a change to the code measured.
    const changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench-results");
    return changed === "" ? sha : `${sha}-dirty`;
  } catch {
    return "unknown";
  }
}

/** Samples the one-minute load average; `summary()` gives a result's `load` field. */
export function loadSampler(): { sample(): number; summary(): BenchResult["load"] } {
  const xs = [os.loadavg()[0]!];
  return {
    sample: () => {
      const x = os.loadavg()[0]!;
      xs.push(x);
      return x;
    },
    summary: () => {
      xs.push(os.loadavg()[0]!);
      return { start: xs[0]!, end: xs.at(-1)!, min: Math.min(...xs), max: Math.max(...xs) };
    },
  };
}

const isNum = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const isObj = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

function checkFigures(where: string, m: unknown): void {
  if (!isObj(m)) throw new BenchResultError(`${where}: not an object`);
  for (const [k, f] of Object.entries(m)) {
    if (!isObj(f) || !isNum(f["median"]) || !Array.isArray(f["runs"]) || typeof f["unit"] !== "string")
      throw new BenchResultError(`${where}.${k}: needs a numeric median, a runs list and a unit`);
    if (!(f["runs"] as unknown[]).every(isNum)) throw new BenchResultError(`${where}.${k}.runs: not all numbers`);
  }
}

/**
 * Checks `x` is a {@link BenchResult} (the rules below, then the JSON Schema through {@link benchResultSchemaErrors});
 * throws a one-line {@link BenchResultError} naming `source` and the field.
 */
export function validateBenchResult(x: unknown, source: string): BenchResult {
  if (!isObj(x)) throw new BenchResultError(`${source}: not a JSON object`);
  if (x["schema"] !== BENCH_RESULT_SCHEMA)
    throw new BenchResultError(
      `${source}: schema is ${JSON.stringify(x["schema"])}, expected "${BENCH_RESULT_SCHEMA}"`,
    );
  for (const k of ["name", "title", "date", "commit", "command"] as const)
    if (typeof x[k] !== "string" || x[k] === "")
      throw new BenchResultError(`${source}: ${k} must be a non-empty string`);
  if (Number.isNaN(Date.parse(x["date"] as string))) throw new BenchResultError(`${source}: date is not an ISO time`);
  const m = x["machine"];
  if (!isObj(m) || typeof m["cpu"] !== "string" || !isNum(m["cores"]))
    throw new BenchResultError(`${source}: machine needs cpu and cores`);
  const l = x["load"];
  if (!isObj(l) || !["start", "end", "min", "max"].every((k) => isNum(l[k])))
    throw new BenchResultError(`${source}: load needs numeric start, end, min and max`);
  if (!isObj(x["settings"])) throw new BenchResultError(`${source}: settings must be an object`);
  if (!Array.isArray(x["anchors"])) throw new BenchResultError(`${source}: anchors must be a list`);
  const anchors = new Set<string>();
  for (const [i, a] of (x["anchors"] as unknown[]).entries()) {
    if (!isObj(a) || typeof a["id"] !== "string" || typeof a["name"] !== "string")
      throw new BenchResultError(`${source}: anchors[${i}] needs an id and a name`);
    anchors.add(a["id"]);
  }
  if (!Array.isArray(x["cases"]) || x["cases"].length === 0)
    throw new BenchResultError(`${source}: cases must be a non-empty list`);
  const ids = new Set<string>();
  for (const [i, c] of (x["cases"] as unknown[]).entries()) {
    const w = `${source}: cases[${i}]`;
    if (!isObj(c) || typeof c["id"] !== "string" || typeof c["label"] !== "string" || typeof c["model"] !== "string")
      throw new BenchResultError(`${w} needs an id, a label and a model`);
    if (ids.has(c["id"])) throw new BenchResultError(`${w}: id "${c["id"]}" repeats`);
    ids.add(c["id"]);
    for (const k of ["backend", "format", "numerics", "anchor"])
      if (c[k] !== null && typeof c[k] !== "string") throw new BenchResultError(`${w}.${k}: a string or null`);
    if (c["anchor"] !== null && !anchors.has(c["anchor"] as string))
      throw new BenchResultError(`${w}.anchor: "${c["anchor"]}" is not in anchors`);
    checkFigures(`${w}.metrics`, c["metrics"]);
    checkFigures(`${w}.anchorMetrics`, c["anchorMetrics"]);
    if (!isObj(c["ratios"]) || !Object.values(c["ratios"]).every(isNum))
      throw new BenchResultError(`${w}.ratios: an object of numbers`);
  }
  if (!Array.isArray(x["notes"]) || !x["notes"].every((n) => typeof n === "string"))
    throw new BenchResultError(`${source}: notes must be a list of strings`);
  const schemaErrors = benchResultSchemaErrors(x);
  if (schemaErrors.length > 0)
    throw new BenchResultError(`${source}: ${schemaErrors[0]} (JSON Schema of ${BENCH_RESULT_SCHEMA})`);
  return x as unknown as BenchResult;
}

/** Reads and checks one result file. */
export function readBenchResult(file: string): BenchResult {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (e) {
    throw new BenchResultError(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? "error"})`);
  }
  let x: unknown;
  try {
    x = JSON.parse(text);
  } catch (e) {
    throw new BenchResultError(`${file}: not JSON (${(e as Error).message})`);
  }
  return validateBenchResult(x, file);
}

/** Every result of a folder (default {@link BENCH_RESULTS_DIR}), oldest file name first. */
export function readBenchResults(dir: string = BENCH_RESULTS_DIR): { file: string; result: BenchResult }[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => ({ file: f, result: readBenchResult(path.join(dir, f)) }));
}

/** JSON indented by one space, with each innermost object or list (a figure, a list of runs) on one line. */
function compactJson(x: unknown): string {
  const plain = JSON.stringify(x, null, 1);
  const compact = plain.replace(/[[{][^[\]{}]*[\]}]/g, (m) =>
    m
      .replace(/\n\s*/g, " ")
      .replace(/([[{]) /g, "$1")
      .replace(/ ([\]}])/g, "$1"),
  );
  // A string holding brackets could be touched by the rewrite: keep it only when it parses back to the same value.
  return JSON.stringify(JSON.parse(compact)) === JSON.stringify(x) ? compact : plain;
}

/** What a bench supplies; the writer adds the schema, date, commit, machine and (by default) the command. */
export type BenchResultInput = Omit<BenchResult, "schema" | "date" | "commit" | "machine" | "command"> & {
  readonly command?: string;
  /** When the run ended (ISO time); default: now. A result converted from a recorded run gives the run's time. */
  readonly date?: string;
  /** The commit measured (take {@link gitCommit} when the run starts); default: the checkout's commit now. */
  readonly commit?: string;
  readonly machine?: BenchMachine;
};

/**
 * Completes `input` and writes it as `<dir>/<YYYY-MM-DD>-<name>.json` (a second run of the same bench on the same
 * day replaces the first); returns the path. The date defaults to now, the commit to the checkout's now, the command
 * to `node <script> <args>` relative to the repository root. The result is validated before it is written.
 */
export function writeBenchResult(input: BenchResultInput, dir: string = BENCH_RESULTS_DIR): string {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(input.name))
    throw new BenchResultError(`bench name "${input.name}": lowercase letters, digits and dashes only`);
  const script = process.argv[1] === undefined ? "" : path.relative(REPO_ROOT, process.argv[1]);
  const date = input.date ?? new Date().toISOString();
  const result: BenchResult = {
    schema: BENCH_RESULT_SCHEMA,
    name: input.name,
    title: input.title,
    date,
    commit: input.commit ?? gitCommit(),
    command: input.command ?? ["node", script, ...process.argv.slice(2)].join(" "),
    machine: input.machine ?? benchMachine(),
    load: input.load,
    settings: input.settings,
    anchors: input.anchors,
    cases: input.cases,
    notes: input.notes,
  };
  const file = path.join(dir, `${date.slice(0, 10)}-${input.name}.json`);
  validateBenchResult(result, file);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(file, `${compactJson(result)}\n`);
  return file;
}
