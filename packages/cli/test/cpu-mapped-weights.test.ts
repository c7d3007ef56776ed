// Weights mapped from their file into the CPU's shared memory (decision 1620): the mapped bytes are the file's (the
// file itself is the oracle), a GGUF model run on mapped weights gives the f64 forward's logits, and the file is
// mapped only when mapping is on.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createCpuExecutor } from "@poot/backend-cpu";
import { openGGUF } from "@poot/models";
import { Engine } from "@poot/runtime";
import { fixture, needFixture, relErr } from "@poot/testkit";
import { describe, expect, test } from "vitest";

const NO_FIXTURES = needFixture("gguf");
const SKIP = NO_FIXTURES === undefined ? "" : ` (skipped: ${NO_FIXTURES})`;
const LINUX = process.platform === "linux";

/** How many mappings of `file` this process holds. */
function mappingsOf(file: string): number {
  return fs
    .readFileSync("/proc/self/maps", "utf8")
    .split("\n")
    .filter((l) => l.endsWith(` ${fs.realpathSync(file)}`)).length;
}

describe.skipIf(NO_FIXTURES !== undefined || !LINUX)(`mapped weights on the CPU${SKIP}`, () => {
  const dir = () => fixture("gguf", "llama3");
  const model = () => path.join(dir(), "model-Q8_0.gguf");

  test("a mapped tensor's bytes are the file's; mapped one page off, they are not (planted)", async () => {
    const file = model();
    const ckpt = await openGGUF(file);
    const bytes = fs.readFileSync(file);
    const executor = createCpuExecutor({ threads: 1 });
    try {
      const t = [...ckpt.tensors()].sort((a, b) => b.byteLength - a.byteLength)[0]!;
      const at = ckpt.locate(t.name)!;
      const held = (offset: number): Buffer => {
        const b = executor.device.mapWeight(t.byteLength, { ...at, offset })!;
        expect(b, "mapped").not.toBeNull();
        return Buffer.from(executor.memory.u8.slice(b.at, b.at + t.byteLength));
      };
      const want = bytes.subarray(at.offset, at.offset + t.byteLength);
      expect(held(at.offset).equals(want)).toBe(true);
      expect(held(at.offset - 4096).equals(want)).toBe(false);
    } finally {
      executor.dispose();
      ckpt.close();
    }
  });

  for (const mapWeights of [true, false])
    test(`mapWeights ${mapWeights}: prompt logits within 1e-4 of the f64 forward; the file ${mapWeights ? "is" : "is not"} mapped`, () => {
      const ref = JSON.parse(fs.readFileSync(path.join(dir(), "reference-Q8_0.json"), "utf8")) as {
        prompt_ids: number[];
      };
      const b = fs.readFileSync(path.join(dir(), "f64-logits-Q8_0.bin"));
      const f64 = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
      const before = mappingsOf(model());
      const executor = createCpuExecutor({ threads: 2, mapWeights });
      const engine = Engine.load(model(), { executor, context: 24, tokenizer: null });
      try {
        const V = engine.config.vocabSize,
          T = ref.prompt_ids.length;
        const row = engine.openSession().step(ref.prompt_ids);
        expect(relErr(row, f64.subarray((T - 1) * V, T * V))).toBeLessThanOrEqual(1e-4);
        const mapped = mappingsOf(model()) - before;
        if (mapWeights) expect(mapped).toBeGreaterThan(0);
        else expect(mapped).toBe(0);
      } finally {
        engine.close();
        executor.dispose();
      }
    }, 600_000);
});

/** The mappings of `file` in /proc/self/maps: [start address − file offset, length] of each. */
function placements(file: string): [bigint, bigint][] {
  return fs
    .readFileSync("/proc/self/maps", "utf8")
    .split("\n")
    .filter((l) => l.endsWith(` ${fs.realpathSync(file)}`))
    .map((l) => {
      const [range, , off] = l.split(/\s+/) as [string, string, string];
      const [lo, hi] = range.split("-").map((h) => BigInt(`0x${h}`)) as [bigint, bigint];
      return [lo - BigInt(`0x${off}`), hi - lo];
    });
}

describe.skipIf(!LINUX)("mapped weights and huge pages (decision 2420)", () => {
  test("a weight of 4 huge pages or more is placed where its file offset agrees with its address by 2 MiB, as the kernel maps huge folios", () => {
    const MiB = 1 << 20;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "poot-huge-"));
    const file = path.join(dir, "w.bin");
    const data = new Uint8Array(24 * MiB).map((_, i) => (i * 2654435761) >>> 24);
    fs.writeFileSync(file, data);
    const fd = fs.openSync(file, "r");
    const executor = createCpuExecutor({ threads: 1 });
    try {
      // Offsets off the huge page (and the small weight off the page by nothing else).
      const big = { fd, offset: 3 * 4096, length: 16 * MiB };
      const b = executor.device.mapWeight(big.length, big)!;
      expect(b, "mapped").not.toBeNull();
      expect(
        Buffer.from(executor.memory.u8.subarray(b.at, b.at + big.length)).equals(
          data.subarray(big.offset, big.offset + big.length),
        ),
      ).toBe(true);
      const maps = placements(file);
      expect(maps.length).toBeGreaterThan(0);
      // Every mapping of the file (the weight's whole pages) agrees with its offset modulo 2 MiB.
      for (const [delta] of maps) expect(delta % BigInt(2 * MiB)).toBe(0n);
    } finally {
      executor.dispose();
      fs.closeSync(fd);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
