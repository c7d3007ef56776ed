// `poot logits|generate --backend interp` on every fixtures/hf family, with the f32 and the bf16 weights (the
// same values: every weight is bf16-exact): the whole compiled Program's kernels run in the kernel-dsl interpreter;
// prompt logits against transformers' float64 logits, greedy ids against the reference.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { openSafetensors } from "@poot/models";
import { poot } from "./run-poot.js";
import { afterAll, describe, expect, test } from "vitest";
import { fixture, needFixture, relErr } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf");
const FIX = fixture();
const HAVE = NO_FIXTURES === undefined;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-interp-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

// f32 weights: every family generates all 16 reference greedy ids through the Engine (prefill chunks, then the
// KV-cached single-token decode program): about 40 s for the five families on this machine. bf16 weights (bf16
// storage kernels) generate the first 4: about 45 s more for the five (2 shared cores).
const FAMILIES = ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"];
const WEIGHTS = [
  ["f32", 16],
  ["bf16", 4],
] as const;

describe.skipIf(!HAVE)(`--backend interp on fixtures/hf${HAVE ? "" : ` (skipped: ${NO_FIXTURES})`}`, () => {
  for (const fam of FAMILIES) {
    for (const [weights, steps] of WEIGHTS) {
      const dir = path.join(FIX, "hf", fam);
      test(`${fam}, ${weights} weights: prompt logits within 1e-4 and the first ${steps} greedy ids equal the reference`, async () => {
        const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
          prompt_ids: number[];
          greedy_ids: number[];
        };
        const want = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("prompt_logits");
        const out = path.join(tmp, `${fam}-${weights}.bin`);
        const r = await poot(
          "logits",
          dir,
          "--ids",
          ref.prompt_ids.join(","),
          "--out",
          out,
          "--backend",
          "interp",
          "--weights",
          weights,
        );
        expect(r.code, r.err).toBe(0);
        const b = fs.readFileSync(out);
        const err = relErr(new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4), want);
        expect(err).toBeLessThanOrEqual(1e-4);
        console.log(`interp ${fam} ${weights}: max |Δlogit| / max |logit| = ${err.toExponential(2)}`);
        const g = await poot(
          "generate",
          dir,
          "--ids",
          ref.prompt_ids.join(","),
          "--max-tokens",
          String(steps),
          "--greedy",
          "--ignore-eos",
          "--backend",
          "interp",
          "--weights",
          weights,
        );
        expect(g.code, g.err).toBe(0);
        expect(JSON.parse(g.out)).toEqual(ref.greedy_ids.slice(0, steps));
      }, 600_000);
    }
  }
});
