// Dispatches per decode token that `poot bench --backend cpu` counts equal what `poot compile --target cpu` predicts
// (issue #16), in both numerics: the prediction plans with the CPU device's own caps (the native GEMVs' formats take
// only their epilogues, decision 2345) and lowers with its native kernels, so the `fast` activation quantizers and the
// two-head epilogues are counted. Packed and dense GGUFs whose widths are whole blocks (llama3-w256) and ones
// whose are not (llama3, where packed contractions stay in Wasm).
import { fastNumericsAvailable } from "@poot/backend-cpu";
import { fixture, needFixture } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import { benchAndCompile } from "./dispatch-counts.js";

const NO_FIXTURES = needFixture("gguf");
const NUMERICS = fastNumericsAvailable() ? (["exact", "fast"] as const) : (["exact"] as const);
/** bench's measured dispatches per decode token, and compile's predicted launches per step, for one file. */
async function countsOf(file: string, numerics: string): Promise<{ measured: unknown; predicted: unknown }> {
  const { bench, compiled } = await benchAndCompile(
    file,
    "cpu",
    ["--threads", "2", "--numerics", numerics],
    ["--numerics", numerics],
  );
  return {
    measured: bench["decodeDispatchesPerToken"],
    predicted: (compiled["lowering"] as { launchesPerStep: number }).launchesPerStep,
  };
}

describe.skipIf(NO_FIXTURES !== undefined)(
  `dispatches per decode token on cpu${NO_FIXTURES !== undefined ? ` (skipped: ${NO_FIXTURES})` : ""}`,
  () => {
    for (const [fam, type] of [
      ["llama3-w256", "Q8_0"],
      ["llama3-w256", "Q4_K_M"],
      ["llama3-w256", "F16"],
      ["llama3", "Q8_0"],
    ] as const)
      for (const numerics of NUMERICS)
        test(`${fam} ${type}, numerics ${numerics}: poot bench counts what poot compile predicts`, async () => {
          const { measured, predicted } = await countsOf(fixture("gguf", fam, `model-${type}.gguf`), numerics);
          expect(typeof measured).toBe("number");
          expect(measured).toBe(predicted);
        }, 120_000);

    // At one token both numerics now launch alike (each `fast` GEMV quantizes its single x row itself, decision 2410):
    // the plant predicts `fast` decode of two tokens, where every packed GEMV's quantizer launches again.
    test("planted: the prediction for two decode tokens differs from one token's count (the check can fail)", async () => {
      if (NUMERICS.length < 2) return;
      const numerics = "fast";
      const { bench, compiled } = await benchAndCompile(
        fixture("gguf", "llama3-w256", "model-Q8_0.gguf"),
        "cpu",
        ["--threads", "2", "--numerics", numerics],
        ["--numerics", numerics, "--tokens", "2"],
      );
      const predicted = (compiled["lowering"] as { launchesPerStep: number }).launchesPerStep;
      expect(typeof bench["decodeDispatchesPerToken"]).toBe("number");
      expect(bench["decodeDispatchesPerToken"]).not.toBe(predicted);
    }, 120_000);
  },
);
