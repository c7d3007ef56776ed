// One timed process for first-token figures where /usr/bin/time and the repo's packages are absent (the GPU
// machine): runs the command given, prints one JSON line {first, wall} in ms (first = first byte on stdout) and
// the command's stdout as `out`, and POOT_TIMING=1's phase lines from stderr as `timing`. Used by packages/backend-cuda/tools/devices-h200.sh (ttft steps).
// usage: node first-token-once.mjs COMMAND [ARGS...]
import { spawn } from "node:child_process";

const [cmd, ...args] = process.argv.slice(2);
if (cmd === undefined) throw new Error("usage: first-token-once.mjs COMMAND [ARGS...]");
const t0 = performance.now();
let first = null;
let out = "";
let err = "";
const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
p.stdout.on("data", (d) => {
  first ??= performance.now() - t0;
  out += d;
});
p.stderr.on("data", (d) => {
  err += d;
});
p.on("close", (code) => {
  const wall = performance.now() - t0;
  // POOT_TIMING=1's phase lines (packages/cli/src/commands/timing.ts), kept whole.
  const timing = err.split("\n").filter((l) => l.startsWith("poot timing: "));
  console.log(JSON.stringify({ code, first, wall, out: out.trim(), err: code === 0 ? "" : err.slice(-400), timing }));
  process.exit(code ?? 1);
});
