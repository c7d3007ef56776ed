// The traced forward of every GGUF fixture (weights kept packed, decoded inside the graph) against the float64
// forward of the same stored weights; F32 files reproduce the reference greedy ids; llama.cpp's distance is printed.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { LoadedModel } from "@poot/models";
import { fixture, needFixture, relErr } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf", "hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

interface Reference {
  prompt_ids: number[];
  reference_greedy_ids: number[];
}

const files: [string, string][] =
  FIXTURES === undefined
    ? []
    : fs
        .readdirSync(fixture("gguf"))
        .filter((d) => fs.statSync(fixture("gguf", d)).isDirectory())
        .flatMap((d) =>
          fs
            .readdirSync(fixture("gguf", d))
            .filter((f) => /^model-.*\.gguf$/.test(f))
            .map((f): [string, string] => [d, f]),
        );

describe.skipIf(FIXTURES === undefined)(
  `same model from HF and GGUF (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    for (const fam of ["llama3", "qwen3", "gemma3", "olmoe"]) {
      test(`${fam}: model-F32.gguf and the HF folder give the same logits (Q/K order, 1+w norms, rope_freqs, repeated KV heads)`, () => {
        const ids = (JSON.parse(fs.readFileSync(fixture("gguf", fam, "reference-F32.json"), "utf8")) as Reference)
          .prompt_ids;
        const hf = LoadedModel.open(fixture("hf", fam)),
          gguf = LoadedModel.open(fixture("gguf", fam, "model-F32.gguf"));
        const rel = relErr(gguf.logits(ids), hf.logits(ids));
        console.log(`${fam}: GGUF vs HF rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-5);
        hf.close();
        gguf.close();
      });
    }
  },
);

describe.skipIf(FIXTURES === undefined)(`GGUF fixtures (${FIXTURES === undefined ? NO_FIXTURES : "present"})`, () => {
  for (const [fam, file] of files) {
    const type = file.slice("model-".length, -".gguf".length);
    const dir = fixture("gguf", fam);
    test(`${fam} ${type}: logits within 1e-4 of the float64 forward of the stored weights`, () => {
      const ref = JSON.parse(fs.readFileSync(path.join(dir, `reference-${type}.json`), "utf8")) as Reference;
      const m = LoadedModel.open(path.join(dir, file));
      const logits = m.logits(ref.prompt_ids);
      const rel = relErr(logits, readF32(path.join(dir, `f64-logits-${type}.bin`)));
      const llama = relErr(logits, readF32(path.join(dir, `logits-${type}.bin`)));
      console.log(`${fam} ${type}: rel vs f64 ${rel.toExponential(2)}; vs llama.cpp ${llama.toExponential(2)}`);
      expect(rel).toBeLessThanOrEqual(1e-4);
      if (type === "F32")
        expect(m.generate(ref.prompt_ids, ref.reference_greedy_ids.length).ids).toEqual(ref.reference_greedy_ids);
      m.close();
    });
  }
});
