// Weights mapped from their file into the CPU's shared memory (decision 1620): the mapped bytes are the file's (the
// file itself is the oracle), a GGUF model run on mapped weights gives the f64 forward's logits, and the file is
// mapped only when mapping is on.
import * as fs from "node:fs";
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
