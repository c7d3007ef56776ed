// Benchmark: opening a Llama-3.2-1B-shaped GGUF (time, RSS and heap growth), then reading and decoding tensors.
// usage: pnpm bench [--type Q4_K_M|Q8_0|F16]   (generates .cache/llama-3.2-1b-<type>.gguf when missing)
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { decodePacked, openGGUF } from "../src/index.js";

function packageDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
  return dir;
}
const pkg = packageDir();
const i = process.argv.indexOf("--type");
const type = i >= 0 ? process.argv[i + 1]! : "Q4_K_M";
const file = path.join(pkg, ".cache", `llama-3.2-1b-${type}.gguf`);
if (!fs.existsSync(file))
  execFileSync(
    process.execPath,
    [path.join(pkg, "scripts", "run-ts.mjs"), path.join(pkg, "scripts", "make-1b-gguf.ts"), "--type", type],
    { stdio: "inherit" },
  );

const gc = (globalThis as { gc?: () => void }).gc;
const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const settle = () => {
  gc?.();
  gc?.();
};

settle();
const m0 = process.memoryUsage();
let t = performance.now();
const g = openGGUF(file);
const openMs = performance.now() - t;
settle();
const m1 = process.memoryUsage();
const size = fs.statSync(file).size;
console.log(
  `file ${path.basename(file)}: ${mib(size)}, ${g.tensors().length} tensors, header ${mib(g.dataOffset)} (${g.metadata.size} metadata keys)`,
);
console.log(
  `first open: ${openMs.toFixed(0)} ms; RSS +${mib(m1.rss - m0.rss)}, heap +${mib(m1.heapUsed - m0.heapUsed)}, external+arrayBuffers +${mib(m1.external + m1.arrayBuffers - m0.external - m0.arrayBuffers)} (${(((m1.rss - m0.rss) / size) * 100).toFixed(1)}% of the file)`,
);
g.close();
const times: number[] = [];
for (let k = 0; k < 5; k++) {
  t = performance.now();
  openGGUF(file).close();
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
console.log(`open (5 more runs): median ${times[2]!.toFixed(0)} ms, min ${times[0]!.toFixed(0)} ms`);

const ck = openGGUF(file);
const name = "blk.0.ffn_gate.weight";
const info = ck.info(name);
t = performance.now();
const raw = await ck.read(name);
const readMs = performance.now() - t;
t = performance.now();
const f = decodePacked(info.format, raw);
const decMs = performance.now() - t;
console.log(
  `${name} ${info.dtype} [${info.shape.join(", ")}]: read ${mib(raw.byteLength)} in ${readMs.toFixed(1)} ms; reference decode to f32 (${mib(f.byteLength)}) in ${decMs.toFixed(0)} ms (${(f.length / decMs / 1e3).toFixed(0)} M elem/s)`,
);

// Reading every tensor once, keeping none: memory stays at the size of the largest tensor, not the file.
settle();
const r0 = process.memoryUsage().rss;
let peak = 0,
  total = 0;
t = performance.now();
for (const ti of ck.tensors()) {
  const b = ck.readSync(ti.name);
  total += b.byteLength;
  peak = Math.max(peak, process.memoryUsage().rss - r0);
}
const allMs = performance.now() - t;
const largest = Math.max(...ck.tensors().map((x) => x.byteLength));
console.log(
  `read all ${ck.tensors().length} tensors (${mib(total)}) one at a time in ${(allMs / 1000).toFixed(2)} s (${(total / 2 ** 20 / (allMs / 1000)).toFixed(0)} MiB/s); peak RSS growth ${mib(peak)} (largest tensor ${mib(largest)})`,
);
ck.close();
