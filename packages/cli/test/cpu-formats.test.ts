// `--backend cpu` on the GGUF files llama.cpp's own quantizer wrote for issue #26 (fixtures/gguf/formats): weights
// bound packed (no more bytes than the file), prompt logits within 1e-4 of llama.cpp's F32 forward of ggml's
// dequantization of the same file, and 16 greedy ids (KV cache, one token per step) equal to that forward's and, where
// llama.cpp's own quantized run agrees with it, to llama.cpp's.
import * as fs from "node:fs";
import * as path from "node:path";
import { createCpuExecutor } from "@poot/backend-cpu";
import { Engine } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { relErr, argmax, REPO_ROOT } from "@poot/testkit";

const DIR = path.join(REPO_ROOT, "fixtures", "gguf", "formats");

interface FormatFixture {
  gguf: string;
  prompt_ids: number[];
  llama_cpp_greedy_ids: number[];
  reference_greedy_ids: number[];
}

function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

describe("--backend cpu on fixtures/gguf/formats (llama.cpp-quantized), weights packed", () => {
  for (const file of fs
    .readdirSync(DIR)
    .filter((f) => f.endsWith(".json"))
    .sort()) {
    const stem = file.slice(0, -".json".length);
    test(`${stem}: prompt logits within 1e-4 of the stored weights' forward; 16 greedy ids as llama.cpp's`, () => {
      const fx = JSON.parse(fs.readFileSync(path.join(DIR, file), "utf8")) as FormatFixture;
      const ref = readF32(path.join(DIR, `${stem}.ref.bin`));
      const executor = createCpuExecutor({ threads: 2 });
      const engine = Engine.load(path.join(DIR, fx.gguf), { executor, context: 40, prefillChunk: 8, tokenizer: null });
      try {
        const V = engine.config.vocabSize,
          T = fx.prompt_ids.length;
        const s = engine.openSession();
        let worst = 0;
        let logits: Float32Array = new Float32Array(0);
        // Steps end at positions 8, 16, 20: each returned row is that position's prompt logits.
        for (const end of [8, 16, T]) {
          logits = s.step(fx.prompt_ids.slice(s.length, end));
          const err = relErr(logits, ref.subarray((end - 1) * V, end * V));
          worst = Math.max(worst, err);
          expect(err, `position ${end - 1}`).toBeLessThanOrEqual(1e-4);
        }
        const ids: number[] = [];
        for (let g = 0; g < fx.reference_greedy_ids.length; g++) {
          ids.push(argmax(logits));
          if (g + 1 < fx.reference_greedy_ids.length) logits = s.step([ids.at(-1)!]);
        }
        expect(ids).toEqual(fx.reference_greedy_ids);
        let k = 0;
        while (k < ids.length && fx.llama_cpp_greedy_ids[k] === fx.reference_greedy_ids[k]) k++;
        expect(ids.slice(0, k)).toEqual(fx.llama_cpp_greedy_ids.slice(0, k));
        s.release();
        const held = executor.deviceBytes().weights,
          size = fs.statSync(path.join(DIR, fx.gguf)).size;
        expect(held).toBeLessThanOrEqual(size);
        console.log(
          `cpu ${stem}: max rel err ${worst.toExponential(2)}; greedy = llama.cpp for ${k}/16; weights held ${held} B of a ${size} B file`,
        );
      } finally {
        engine.close();
        executor.dispose();
      }
    }, 600_000);
  }
});
