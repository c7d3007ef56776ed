// `--numerics fast` on `--backend cpu` (decision 2320) against llama.cpp's own logits for the same GGUF files
// (fixtures/gguf: llama.cpp's prompt logits and greedy ids), beside `exact` on the same files: fast must be within
// the stated tolerance of llama.cpp (and closer to it than exact where it measured so), with the same argmax at every
// prompt row and the same greedy ids up to llama.cpp's first near-tie; and a planted violation (one weight block's
// scale doubled in a copy of the file) must fail the tolerance.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createCpuExecutor, fastNumericsAvailable } from "@poot/backend-cpu";
import { openGGUF } from "@poot/models";
import { Engine } from "@poot/runtime";
import { argmax, fixture, needFixture } from "@poot/testkit";
import { describe, expect, test } from "vitest";

const NO_FIXTURES = needFixture("gguf");
const HAVE = NO_FIXTURES === undefined;
const VNNI = fastNumericsAvailable();
const SKIP = !HAVE ? ` (skipped: ${NO_FIXTURES})` : !VNNI ? " (skipped: no native fast kernels on this platform)" : "";

/**
 * Max |poot − llama.cpp| / max |llama.cpp| over the prompt logits that `fast` must stay within (measured: 6.5e-3 …
 * 3.5e-2, decision 2320). These tiny random models amplify one flipped 8-bit rounding to ~1e-3 of the logits;
 * llama.cpp's own AVX2 and AVX-512 builds differ by up to 7.4e-3 on them (fixtures/gguf/README.md); and poot
 * keeps the LM head exact here (the final norm fuses into it on these small models, so no native route takes it).
 * The Q4_K_M files' Q6_K matrices (attn_v, ffn_down of one layer) are fast too since decision 2335.
 */
const TOL = 4e-2;

/** The files on which fast measured closer to llama.cpp than exact (all Q8_0/Q4_K matrices 256 wide or more). */
const CLOSER = new Set(["llama3-w256 Q8_0", "llama3-w256 Q4_K_M"]);

/**
 * The files with Q8_0, Q4_K or Q6_K matrices (the 64-wide Q4_K_M files hold Q5_0/Q5_1 instead: exact in both
 * numerics).
 */
const FILES: [string, string][] = [
  ["llama3", "Q8_0"],
  ["qwen3", "Q8_0"],
  ["gemma3", "Q8_0"],
  ["llama3-w256", "Q8_0"],
  ["llama3-w256", "Q4_K_M"],
  ["qwen3-w256", "Q8_0"],
  ["qwen3-w256", "Q4_K_M"],
];

function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

interface Measured {
  /** Max |Δ| / max |llama.cpp| over the prompt rows at positions 7, 15, 19. */
  readonly rel: number;
  /** Rows whose argmax differs from llama.cpp's. */
  readonly argmaxDiffs: number;
  readonly greedy: number[];
  /** Greedy steps compared: up to the first where llama.cpp's own top-2 margin is within TOL of its max logit. */
  readonly decisive: number;
}

/** Prompt logits (three steps) and 16 greedy ids of `gguf` in `numerics`, against llama.cpp's. */
function measure(gguf: string, dir: string, type: string, numerics: "exact" | "fast"): Measured {
  const ref = JSON.parse(fs.readFileSync(path.join(dir, `reference-${type}.json`), "utf8")) as {
    prompt_ids: number[];
    llama_cpp_greedy_ids: number[];
  };
  const llama = readF32(path.join(dir, `logits-${type}.bin`));
  const executor = createCpuExecutor({ threads: 2, numerics });
  const engine = Engine.load(gguf, { executor, context: 48, prefillChunk: 8, tokenizer: null });
  try {
    const V = engine.config.vocabSize;
    const s = engine.openSession();
    let d = 0,
      m = 0,
      argmaxDiffs = 0;
    for (const end of [8, 16, ref.prompt_ids.length]) {
      const row = s.step(ref.prompt_ids.slice(s.length, end));
      const ll = llama.subarray((end - 1) * V, end * V);
      for (let i = 0; i < V; i++) {
        d = Math.max(d, Math.abs(row[i]! - ll[i]!));
        m = Math.max(m, Math.abs(ll[i]!));
      }
      if (argmax(row) !== argmax(ll)) argmaxDiffs++;
    }
    s.release();
    // Greedy as llama.cpp ran it: the prompt in one batch, then one token at a time.
    const g = engine.openSession();
    let logits = g.step(ref.prompt_ids);
    const greedy: number[] = [];
    for (let i = 0; i < ref.llama_cpp_greedy_ids.length; i++) {
      greedy.push(argmax(logits));
      if (i + 1 < ref.llama_cpp_greedy_ids.length) logits = g.step([greedy.at(-1)!]);
    }
    g.release();
    // llama.cpp's greedy logits: a step whose top two are closer than TOL · max |logit| is a near-tie either way.
    const gl = readF32(path.join(dir, `greedy-logits-${type}.bin`));
    let decisive = 0;
    for (; decisive < ref.llama_cpp_greedy_ids.length; decisive++) {
      const row = gl.subarray(decisive * V, (decisive + 1) * V);
      const sorted = [...row].sort((a, b) => b - a);
      const big = Math.max(...row.map(Math.abs));
      if (sorted[0]! - sorted[1]! < TOL * big) break;
    }
    return { rel: d / m, argmaxDiffs, greedy, decisive };
  } finally {
    engine.close();
    executor.dispose();
  }
}

describe.skipIf(!HAVE || !VNNI)(`--numerics fast against llama.cpp's logits${SKIP}`, () => {
  for (const [fam, type] of FILES)
    test(`${fam} ${type}: fast within ${TOL} of llama.cpp, argmax and the decisive greedy ids equal`, () => {
      const dir = fixture("gguf", fam);
      const gguf = path.join(dir, `model-${type}.gguf`);
      const ids = (
        JSON.parse(fs.readFileSync(path.join(dir, `reference-${type}.json`), "utf8")) as {
          llama_cpp_greedy_ids: number[];
        }
      ).llama_cpp_greedy_ids;
      const fast = measure(gguf, dir, type, "fast");
      const exact = measure(gguf, dir, type, "exact");
      console.log(
        `${fam} ${type}: rel vs llama.cpp fast ${fast.rel.toExponential(2)} exact ${exact.rel.toExponential(2)}; greedy = llama.cpp fast ${fast.greedy.filter((g, i) => g === ids[i]).length}/${ids.length} exact ${exact.greedy.filter((g, i) => g === ids[i]).length}/${ids.length}; decisive steps ${fast.decisive}`,
      );
      expect(fast.rel, "fast: max |poot - llama.cpp| / max |llama.cpp|").toBeLessThanOrEqual(TOL);
      if (CLOSER.has(`${fam} ${type}`))
        expect(fast.rel, "fast is closer to llama.cpp than exact").toBeLessThan(exact.rel);
      expect(fast.argmaxDiffs, "prompt rows whose argmax differs from llama.cpp's").toBe(0);
      expect(fast.greedy.slice(0, fast.decisive), "greedy ids up to llama.cpp's first near-tie").toEqual(
        ids.slice(0, fast.decisive),
      );
    }, 600_000);

  test("planted violation: one Q8_0 block's scale doubled in a copy of the file fails the tolerance", () => {
    const dir = fixture("gguf", "llama3-w256");
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-fast-"));
    try {
      const copy = path.join(tmp, "model-Q8_0.gguf");
      fs.copyFileSync(path.join(dir, "model-Q8_0.gguf"), copy);
      const ck = openGGUF(copy);
      // Every block of the first layer's attn_q: its f16 scale's exponent raised by one (×2).
      const info = ck.info("blk.0.attn_q.weight");
      const at = ck.dataOffset + info.relativeOffset;
      const blocks = (info.shape.reduce((a, b) => a * b, 1) / 32) | 0;
      ck.close();
      const bytes = fs.readFileSync(copy);
      for (let b = 0; b < blocks; b++) bytes[at + b * 34 + 1] = bytes[at + b * 34 + 1]! + 4;
      fs.writeFileSync(copy, bytes);
      const planted = measure(copy, dir, "Q8_0", "fast");
      console.log(`planted wrong block scale: rel vs llama.cpp ${planted.rel.toExponential(2)}`);
      expect(planted.rel).toBeGreaterThan(TOL);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }, 600_000);
});
