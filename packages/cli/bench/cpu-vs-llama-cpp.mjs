// poot's CPU backend beside llama.cpp on this machine, interleaved: for each Llama-3.2-1B-shaped GGUF (F16, Q8_0,
// Q4_K_M; generated deterministically by tools/random-model when missing), N pairs of one `poot bench --backend cpu`
// run (the built CLI, as users run it) and one llama.cpp run (node-llama-cpp's prebuilt CPU build, its own process),
// their order alternating pair by pair. Prints decode and prefill tok/s, medians and ratios, the llama.cpp build it
// loaded, and writes bench-results/<date>-cpu-vs-llama-cpp.json (the docs site's charts read it).
//
// usage: node bench/cpu-vs-llama-cpp.mjs [--formats F16,Q8_0,Q4_K_M] [--pairs 5] [--prompt-tokens 128]
//          [--gen-tokens 64] [--threads 2] [--models-dir DIR] [--numerics exact,fast] [--name NAME] [--no-write]
//          [--installed DIR]
// (--installed DIR: measure @poot/cli as npm installs it from the packed workspace, the layout users run;
// --name: the result file's name part, default cpu-vs-llama-cpp; a second run the same day with the same name
// replaces the first)
// On a shared machine, run it under `flock /tmp/poot-bench.lock` so two benchmarks do not share the cores.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { figure, gitCommit, loadSampler, npmInstall, packWorkspace, ratiosOf, writeBenchResult } from "@poot/testkit";

const CLI = fileURLToPath(new URL("..", import.meta.url));
const REPO = path.resolve(CLI, "../..");
const LLAMA_RUN = path.join(CLI, "bench/llama-cpp-run.mjs");
const MAKE_MODEL = path.join(REPO, "tools/random-model/make-random-model.mjs");
const FORMATS = ["F16", "Q8_0", "Q4_K_M"];
const USAGE =
  "usage: node bench/cpu-vs-llama-cpp.mjs [--formats F16,Q8_0,Q4_K_M] [--pairs 5] [--prompt-tokens 128] " +
  "[--gen-tokens 64] [--threads 2] [--models-dir DIR] [--numerics exact,fast] [--name NAME] [--no-write] " +
  "[--installed DIR]";

function fail(msg) {
  console.error(`bench cpu-vs-llama-cpp: ${msg}`);
  process.exit(1);
}

let o;
try {
  o = parseArgs({
    options: {
      formats: { type: "string", default: FORMATS.join(",") },
      pairs: { type: "string", default: "5" },
      "prompt-tokens": { type: "string", default: "128" },
      "gen-tokens": { type: "string", default: "64" },
      threads: { type: "string", default: "2" },
      "models-dir": { type: "string", default: path.join(os.tmpdir(), "poot-random-model") },
      numerics: { type: "string" },
      name: { type: "string", default: "cpu-vs-llama-cpp" },
      "no-write": { type: "boolean", default: false },
      installed: { type: "string" },
      help: { type: "boolean", default: false },
    },
  }).values;
} catch (e) {
  fail(`${e.message}\n${USAGE}`);
}
if (o.help) {
  console.log(USAGE);
  process.exit(0);
}
const int = (name, min) => {
  const v = Number(o[name]);
  if (!Number.isInteger(v) || v < min) fail(`--${name} must be an integer >= ${min}, not "${o[name]}"`);
  return v;
};
const PAIRS = int("pairs", 1),
  P = int("prompt-tokens", 1),
  G = int("gen-tokens", 2),
  THREADS = int("threads", 1);
const formats = o.formats.split(",").map((f) => f.trim());
for (const f of formats) if (!FORMATS.includes(f)) fail(`--formats: ${f} is not one of ${FORMATS.join(", ")}`);
const modelsDir = path.resolve(o["models-dir"]);
if (!/^[a-z0-9][a-z0-9-]*$/.test(o.name)) fail(`--name: lowercase letters, digits and dashes only, not "${o.name}"`);

// The CLI as an install lays it out. --installed DIR: every workspace package packed and installed with npm into
// DIR (as `npm i -g @poot/cli` would lay it out; done once, reused while DIR holds an install of the same commit,
// redone for another commit or a tree with uncommitted changes);
// otherwise the workspace's built dist/ with the kernel library (kernelgen's assets) beside it.
let POOT = path.join(CLI, "bin/poot.mjs");
let layout = "the workspace's built packages (packages/cli/dist)";
if (o.installed !== undefined) {
  const dir = path.resolve(o.installed);
  POOT = path.join(dir, "node_modules/@poot/cli/bin/poot.mjs");
  // An install made from another commit (or a tree with changes since) is stale: measured, it would report old code.
  const stamp = path.join(dir, ".poot-source");
  const source = execFileSync("git", ["-C", CLI, "describe", "--always", "--dirty"], { encoding: "utf8" }).trim();
  if (existsSync(POOT) && (!existsSync(stamp) || readFileSync(stamp, "utf8") !== source || source.endsWith("-dirty")))
    rmSync(path.join(dir, "node_modules"), { recursive: true, force: true });
  if (!existsSync(POOT)) {
    if (!existsSync(path.join(CLI, "dist/index.js"))) fail("@poot/cli is not built; run `pnpm build` first");
    console.log(`packing the workspace and installing @poot/cli with npm into ${dir} ...`);
    try {
      npmInstall(dir, packWorkspace(path.join(dir, ".tarballs")));
      writeFileSync(stamp, source);
    } catch (e) {
      fail(e.message.split("\n")[0]);
    }
  }
  layout = "@poot/cli installed with npm from the workspace's packed tarballs (every package's assets as published)";
} else {
  if (!existsSync(path.join(CLI, "dist/index.js"))) fail("@poot/cli is not built; run `pnpm build` (or `pnpm bench`)");
  const assets = path.join(CLI, "node_modules/@poot/kernelgen/assets");
  if (!existsSync(assets) || readdirSync(assets).length === 0)
    fail(`${assets} is missing or empty: the CLI would run without its kernel library; run \`pnpm install\``);
}

// Numerics: what `poot bench` offers (`exact` alone until the CLI has --numerics).
const benchHelp = execFileSync(process.execPath, [POOT, "bench", "--help"], { encoding: "utf8" });
const cliHasNumerics = benchHelp.includes("--numerics");
const numerics = (o.numerics ?? (cliHasNumerics ? "fast,exact" : "exact")).split(",").map((n) => n.trim());
for (const n of numerics) {
  if (n !== "exact" && n !== "fast") fail(`--numerics: ${n} is not exact or fast`);
  if (n === "fast" && !cliHasNumerics) fail("--numerics fast: this build's `poot bench` has no --numerics option");
}

/** llama.cpp as the bench loaded it: release, node-llama-cpp version, build kind and the per-CPU library. */
function llamaNameOf(b) {
  return `llama.cpp ${b.llamaCpp} (node-llama-cpp ${b.nodeLlamaCpp}, ${b.buildType} CPU build, ${b.cpuLibrary})`;
}

/** Writes the result so far (after each format, so a run cut short leaves the formats it finished). */
function save(done) {
  if (o["no-write"] || build === null) return;
  const file = writeBenchResult({
    name: o.name,
    commit,
    title: "poot --backend cpu vs llama.cpp, Llama-3.2-1B-shaped GGUFs, decode and prefill",
    load: load.summary(),
    settings: {
      threads: THREADS,
      promptTokens: P,
      genTokens: G,
      pairs: PAIRS,
      interleaved: true,
      models: "tools/random-model/make-random-model.mjs --seed 1",
      poot: layout,
      pootCommand: `poot bench MODEL --backend cpu --threads ${THREADS} --prompt-tokens ${P} --gen-tokens ${G} --runs 1 --json`,
    },
    anchors: [
      {
        id: "llama.cpp",
        name: llamaNameOf(build),
        detail:
          `${build.systemInfo}; context ${llamaContext.size}, batch ${llamaContext.batchSize}, flash attention ` +
          `${llamaContext.flashAttention}, ${llamaContext.threads} threads, F16 KV cache, greedy`,
      },
    ],
    cases: cases.map(({ kernels, ...c }) => c),
    notes: [
      "Each pair is one poot process and one llama.cpp process, each loading the file, warming up once and timing one " +
        "run; the pair's order alternates. Decode counts the steps after the first token; prefill is the prompt to " +
        "the first token.",
      `poot kernels: ${(cases[0]?.kernels ?? "unknown").replaceAll(`${REPO}/`, "")}.`,
      ...(done.length === formats.length
        ? []
        : [`Cut short: only ${done.join(", ")} of ${formats.join(", ")} measured.`]),
      "tok/CPU-s: tokens per CPU-second of the process (every thread), the figure least moved by other work on a " +
        "shared machine.",
    ],
  });
  console.log(`wrote ${path.relative(REPO, file)}`);
}

/** Runs `node args` from the repository root; resolves to its stdout, rejects with its last stderr line. */
function node(args, what) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
    let out = "",
      err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (code === 0) return resolve({ out, err });
      const last = err.trim().split("\n").at(-1) ?? "";
      reject(new Error(`${what} failed (${signal ?? `exit ${code}`}): ${last}`));
    });
  });
}

/** The GGUF of `format`, generated (deterministically, seed 1) when missing. */
async function modelFile(format) {
  const file = path.join(modelsDir, `llama-3.2-1b-random-${format}.gguf`);
  if (existsSync(file)) return file;
  console.log(`${file} is missing: generating it (tools/random-model/make-random-model.mjs --type ${format}) ...`);
  await node([MAKE_MODEL, "--type", format, "--out-dir", modelsDir], `make-random-model --type ${format}`);
  return file;
}

/** One `poot bench --backend cpu` run (after its own warm-up) through the built CLI. */
async function pootRun(file, num) {
  const args = [POOT, "bench", file, "--backend", "cpu", "--threads", String(THREADS)];
  args.push("--prompt-tokens", String(P), "--gen-tokens", String(G), "--runs", "1", "--json");
  if (cliHasNumerics) args.push("--numerics", num);
  const { out } = await node(args, `poot bench ${path.basename(file)}`);
  return JSON.parse(out);
}

/** One llama.cpp run (after its own warm-up) in a fresh process. */
async function llamaRun(file) {
  const { out } = await node([LLAMA_RUN, file, String(P), String(G), String(THREADS)], `llama.cpp on ${file}`);
  return JSON.parse(out.trim().split("\n").at(-1));
}

const commit = gitCommit();
const load = loadSampler();
console.log(`poot: ${layout}`);
const done = [];
const fmt = (x) => x.toFixed(2);
let build = null,
  llamaContext = null;
const cases = [];
const t0 = performance.now();
console.log(
  `poot (cpu, numerics ${numerics.join(", ")}) vs llama.cpp: ${formats.join(", ")}, prompt ${P}, generate ${G}, ` +
    `${THREADS} threads, ${PAIRS} interleaved pairs each; load average ${os.loadavg()[0].toFixed(2)}`,
);
for (const format of formats) {
  const file = await modelFile(format);
  const poot = Object.fromEntries(numerics.map((n) => [n, []]));
  const llama = [];
  for (let i = 0; i < PAIRS; i++) {
    // Alternate who goes first, so a drift of the machine's load lands on both sides alike.
    const order = i % 2 === 0 ? [...numerics, "llama.cpp"] : ["llama.cpp", ...numerics];
    for (const who of order) {
      const l = load.sample();
      const w = performance.now();
      if (who === "llama.cpp") {
        const r = await llamaRun(file);
        build ??= r.build;
        llamaContext ??= r.context;
        llama.push(r);
        console.log(
          `  ${format} pair ${i + 1}/${PAIRS} llama.cpp   decode ${fmt(r.decodeTokS)} tok/s, prefill ${fmt(r.prefillTokS)} tok/s ` +
            `(${((performance.now() - w) / 1000).toFixed(0)} s, load ${l.toFixed(2)})`,
        );
      } else {
        const r = await pootRun(file, who);
        poot[who].push(r);
        console.log(
          `  ${format} pair ${i + 1}/${PAIRS} poot ${who.padEnd(6)} decode ${fmt(r.decodeTokS)} tok/s, prefill ${fmt(r.prefillTokS)} tok/s, ` +
            `${r.decodeDispatchesPerToken} dispatches/token (${((performance.now() - w) / 1000).toFixed(0)} s, load ${l.toFixed(2)})`,
        );
      }
    }
  }
  const anchorMetrics = {
    decodeTokS: figure(
      llama.map((r) => r.decodeTokS),
      "tok/s",
    ),
    prefillTokS: figure(
      llama.map((r) => r.prefillTokS),
      "tok/s",
    ),
    decodeTokPerCpuS: figure(
      llama.map((r) => r.decodeTokPerCpuS),
      "tok/CPU-s",
    ),
    prefillTokPerCpuS: figure(
      llama.map((r) => r.prefillTokPerCpuS),
      "tok/CPU-s",
    ),
  };
  for (const n of numerics) {
    const rs = poot[n];
    const metrics = {
      decodeTokS: figure(
        rs.map((r) => r.decodeTokS),
        "tok/s",
      ),
      prefillTokS: figure(
        rs.map((r) => r.prefillTokS),
        "tok/s",
      ),
      decodeTokPerCpuS: figure(
        rs.map((r) => r.decodeTokPerCpuS),
        "tok/CPU-s",
      ),
      prefillTokPerCpuS: figure(
        rs.map((r) => r.prefillTokPerCpuS),
        "tok/CPU-s",
      ),
      ...(rs[0].decodeDispatchesPerToken === null
        ? {}
        : {
            dispatchesPerToken: figure(
              rs.map((r) => r.decodeDispatchesPerToken),
              "dispatches/token",
            ),
          }),
    };
    cases.push({
      id: `cpu-${format}-${n}`,
      label: `poot cpu ${format} (${n})`,
      backend: "cpu",
      format,
      numerics: n,
      model: path.relative(modelsDir, file),
      metrics,
      anchor: "llama.cpp",
      anchorMetrics,
      ratios: ratiosOf(metrics, anchorMetrics),
      kernels: rs[0].cpuKernels,
    });
  }
  done.push(format);
  save(done);
}
const minutes = (performance.now() - t0) / 60000;

const llamaName = llamaNameOf(build);
console.log(`\nllama.cpp build loaded: ${llamaName}\n  ${build.systemInfo}`);
console.log(
  `  context ${llamaContext.size} tokens, batch ${llamaContext.batchSize}, flash attention ${llamaContext.flashAttention}, ` +
    `${llamaContext.threads} threads, F16 KV cache (node-llama-cpp's defaults)`,
);
console.log(`\nmedian of ${PAIRS} interleaved pairs (${minutes.toFixed(1)} min):\n`);
console.log("| format | numerics | decode poot / llama.cpp | prefill poot / llama.cpp | dispatches/token |");
console.log("| --- | --- | --- | --- | --- |");
for (const c of cases) {
  const d = c.metrics.decodeTokS.median,
    dl = c.anchorMetrics.decodeTokS.median,
    p = c.metrics.prefillTokS.median,
    pl = c.anchorMetrics.prefillTokS.median;
  console.log(
    `| ${c.format} | ${c.numerics} | ${fmt(d)} / ${fmt(dl)} = ${fmt(d / dl)}x | ${fmt(p)} / ${fmt(pl)} = ${fmt(p / pl)}x | ${c.metrics.dispatchesPerToken?.median ?? "-"} |`,
  );
}
const loadSummary = load.summary();
console.log(
  `\nload average (1 min): start ${fmt(loadSummary.start)}, end ${fmt(loadSummary.end)}, ` +
    `range ${fmt(loadSummary.min)}-${fmt(loadSummary.max)} over the measurements`,
);
