// Benchmark: start-up time of `poot --version` (the built bin), against bare `node -e 0` measured in the
// same run as the baseline. Prints the BENCHMARKS.md record and writes bench-results/<date>-cli-startup.json.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { figure, gitCommit, loadSampler, ratiosOf, writeBenchResult } from "@poot/testkit";

const RUNS = 15;
const bin = fileURLToPath(new URL("../bin/poot.mjs", import.meta.url));
if (!existsSync(new URL("../dist/index.js", import.meta.url))) {
  console.error("bench: @poot/cli is not built; run `pnpm build` (or `pnpm bench`, which builds first)");
  process.exit(1);
}

/** Wall time in ms of one run of node with `args`; fails loudly if the command fails. */
function timeOnce(args) {
  const t0 = process.hrtime.bigint();
  const res = spawnSync(process.execPath, args, { encoding: "utf8" });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (res.status !== 0) throw new Error(`node ${args.join(" ")} exited ${res.status}: ${res.stderr}`);
  return ms;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const commit = gitCommit();
const load = loadSampler();
// Interleave the two commands so that machine load drifts affect both alike.
const base = [];
const poot = [];
timeOnce(["-e", "0"]);
timeOnce([bin, "--version"]);
for (let i = 0; i < RUNS; i++) {
  base.push(timeOnce(["-e", "0"]));
  poot.push(timeOnce([bin, "--version"]));
}
const mb = median(base);
const mp = median(poot);
console.log(
  `machine:  ${os.cpus()[0]?.model ?? "unknown cpu"} x${os.cpus().length}, ${os.platform()} ${os.release()}, node ${process.version}`,
);
console.log(`date:     ${new Date().toISOString()}`);
console.log(`command:  node packages/cli/bin/poot.mjs --version   (median of ${RUNS} runs)`);
console.log(`baseline: node -e 0   (median of ${RUNS} runs, same run, interleaved)`);
console.log(`poot --version  ${mp.toFixed(1)} ms   baseline ${mb.toFixed(1)} ms   ratio ${(mp / mb).toFixed(2)}x`);
const metrics = { startMs: figure(poot, "ms") };
const anchorMetrics = { startMs: figure(base, "ms") };
const file = writeBenchResult({
  name: "cli-startup",
  commit,
  title: "poot --version start-up time against bare node, interleaved",
  load: load.summary(),
  settings: { runs: RUNS, interleaved: true },
  anchors: [{ id: "node", name: `node -e 0 (${process.version})` }],
  cases: [
    {
      id: "poot-version",
      label: "poot --version",
      backend: null,
      format: null,
      numerics: null,
      model: "none",
      metrics,
      anchor: "node",
      anchorMetrics,
      ratios: ratiosOf(metrics, anchorMetrics),
    },
  ],
  notes: ["Wall time of a fresh process each run, after one warm-up of each command."],
});
console.log(`wrote ${file}`);
