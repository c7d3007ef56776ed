// Time to the first token of fresh `poot run` processes, cold (an empty lowering cache) and warm (the entries the
// cold run wrote), alternating cold/warm PAIRS times. The first token is the first byte on stdout (`--max-tokens 1`,
// greedy); wall = whole process; cpu = its user + system seconds (all threads, through /usr/bin/time: on a shared
// machine the work done is steadier than the wall). Prints each run and the ratios of the medians, and writes
// bench-results/<date>-first-token-<backend>.json (the warm runs against the cold ones as the anchor).
// usage: node packages/cli/bench/first-token-cli.mjs MODEL [PAIRS=3] [BACKEND=cpu] [PROMPT=Hello]   (after the build)
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { figure, gitCommit, loadSampler, ratiosOf, writeBenchResult } from "@poot/testkit";

const [model, pairsArg = "3", backend = "cpu", prompt = "Hello"] = process.argv.slice(2);
if (model === undefined) throw new Error("usage: first-token-cli.mjs MODEL [PAIRS] [BACKEND] [PROMPT]");
const bin = fileURLToPath(new URL("../bin/poot.mjs", import.meta.url));
const args = [bin, "run", model, "--backend", backend, "--prompt", prompt, "--max-tokens", "1", "--temperature", "0"];

function once(cacheDir) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = null;
    let out = "";
    let err = "";
    const p = spawn("/usr/bin/time", ["-f", "cpu %U %S", process.execPath, ...args], {
      env: { ...process.env, POOT_CACHE_DIR: cacheDir },
    });
    p.stdout.on("data", (d) => {
      first ??= performance.now() - t0;
      out += d;
    });
    p.stderr.on("data", (d) => {
      err += d;
    });
    p.on("close", (code) => {
      if (code !== 0 || first === null) reject(new Error(`poot run failed (${code}): ${err}`));
      else {
        const [, user, sys] = /cpu ([\d.]+) ([\d.]+)/.exec(err) ?? [];
        resolve({ first, wall: performance.now() - t0, cpu: Number(user) + Number(sys), out: out.trim() });
      }
    });
  });
}

const commit = gitCommit();
const sampler = loadSampler();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cold = [];
const warm = [];
const cpu = { cold: [], warm: [] };
const show = (what, r, load) =>
  console.log(
    `${what}: first token ${(r.first / 1000).toFixed(2)} s, wall ${(r.wall / 1000).toFixed(2)} s, cpu ${r.cpu.toFixed(2)} s, load ${load}`,
  );
for (let i = 0; i < Number(pairsArg); i++) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "poot-ttft-"));
  const load = () => os.loadavg()[0].toFixed(1);
  const c = await once(dir);
  console.log(
    `cold: first token ${(c.first / 1000).toFixed(2)} s, wall ${(c.wall / 1000).toFixed(2)} s, load ${load()}`,
  );
  const w = await once(dir);
  console.log(
    `warm: first token ${(w.first / 1000).toFixed(2)} s, wall ${(w.wall / 1000).toFixed(2)} s, load ${load()}`,
  );
  if (w.out !== c.out) throw new Error(`warm answer ${JSON.stringify(w.out)} != cold ${JSON.stringify(c.out)}`);
  cold.push(c.first);
  warm.push(w.first);
  cpu.cold.push(c.cpu);
  cpu.warm.push(w.cpu);
  fs.rmSync(dir, { recursive: true, force: true });
}
const [mc, mw] = [median(cold), median(warm)];
console.log(
  `median first token: cold ${(mc / 1000).toFixed(2)} s, warm ${(mw / 1000).toFixed(2)} s, ratio ${(mc / mw).toFixed(2)}x`,
);
const [cc, cw] = [median(cpu.cold), median(cpu.warm)];
console.log(`median cpu: cold ${cc.toFixed(2)} s, warm ${cw.toFixed(2)} s, ratio ${(cc / cw).toFixed(2)}x`);
const metrics = { firstTokenMs: figure(warm, "ms"), cpuS: figure(cpu.warm, "CPU-s") };
const anchorMetrics = { firstTokenMs: figure(cold, "ms"), cpuS: figure(cpu.cold, "CPU-s") };
const file = writeBenchResult({
  name: `first-token-${backend}`,
  commit,
  title: `poot run --backend ${backend}: time to the first token of a fresh process, warm lowering cache against cold`,
  load: sampler.summary(),
  settings: { pairs: Number(pairsArg), prompt, maxTokens: 1, alternated: true },
  anchors: [{ id: "cold", name: "the same command with an empty lowering cache (POOT_CACHE_DIR a new folder)" }],
  cases: [
    {
      id: `${backend}-warm`,
      label: `poot run ${backend}, warm cache`,
      backend,
      format: null,
      numerics: null,
      model,
      metrics,
      anchor: "cold",
      anchorMetrics,
      ratios: ratiosOf(metrics, anchorMetrics),
    },
  ],
  notes: ["The first token is the first byte on stdout; CPU-s is the process's user + system time (all threads)."],
});
console.log(`wrote ${file}`);
