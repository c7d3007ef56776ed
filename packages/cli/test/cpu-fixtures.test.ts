// `--backend cpu` end to end: every fixtures/hf family through the runtime's Engine on the CPU executor
// (Wasm kernels on worker_threads), prefill and decode logits against transformers' float64 logits and the greedy ids,
// with f32 and bf16 weights; every fixtures/gguf file with its weights kept packed against its f64 forward.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createCpuExecutor } from "@poot/backend-cpu";
import { LoadedModel, openSafetensors } from "@poot/models";
import { Engine } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { fixture, needFixture, relErr, argmax, REPO_ROOT } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf", "gguf");
const FIX = fixture();
const HAVE = NO_FIXTURES === undefined;
const SKIP = HAVE ? "" : ` (skipped: ${NO_FIXTURES})`;

function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

/** The issue #26 families, whose fixtures live in the repository (fixtures/hf, see its README). */
const REPO_FAMILIES = ["granite", "smollm3", "phi4", "gptoss", "deepseek2"];
const FAMILY_DIRS: [string, string][] = [
  ...(HAVE
    ? ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"].map((f): [string, string] => [f, path.join(FIX, "hf", f)])
    : []),
  ...REPO_FAMILIES.map((f): [string, string] => [f, fixture("hf", f)]),
];

describe(`--backend cpu on the hf fixture families${SKIP}`, () => {
  for (const [fam, dir] of FAMILY_DIRS) {
    for (const weights of ["f32", "bf16"] as const) {
      test(`${fam} ${weights}: prefill and every decode row within 1e-4 of transformers, greedy ids equal`, () => {
        const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
          prompt_ids: number[];
          greedy_ids: number[];
        };
        const full = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("full_logits");
        const executor = createCpuExecutor({ threads: 2 });
        const engine = new Engine(LoadedModel.open(dir, { weights }), { executor, context: 64, tokenizer: null });
        try {
          const V = engine.config.vocabSize,
            T = ref.prompt_ids.length;
          const row = (r: number): Float32Array => full.subarray(r * V, (r + 1) * V);
          const pre = engine.openSession();
          const errs: number[] = [relErr(pre.step(ref.prompt_ids), row(T - 1))];
          expect(errs[0], "prefill").toBeLessThanOrEqual(1e-4);
          pre.release();
          // Decode one token at a time, fed the reference continuation so every row is comparable.
          const s = engine.openSession();
          let logits: Float32Array = new Float32Array(0);
          for (let t = 0; t < T; t++) {
            logits = s.step([ref.prompt_ids[t]!]);
            errs.push(relErr(logits, row(t)));
            expect(errs.at(-1), `decode position ${t}`).toBeLessThanOrEqual(1e-4);
          }
          const ids: number[] = [];
          for (let g = 0; g < ref.greedy_ids.length; g++) {
            ids.push(argmax(logits));
            if (g + 1 === ref.greedy_ids.length) break;
            logits = s.step([ref.greedy_ids[g]!]);
            errs.push(relErr(logits, row(T + g)));
            expect(errs.at(-1), `decode position ${T + g}`).toBeLessThanOrEqual(1e-4);
          }
          expect(ids).toEqual(ref.greedy_ids);
          s.release();
          console.log(
            `cpu ${fam} ${weights}: max rel err ${Math.max(...errs).toExponential(2)} over ${errs.length} rows`,
          );
        } finally {
          engine.close();
          executor.dispose();
        }
      }, 600_000);
    }
  }
});

describe.skipIf(!HAVE)(`--backend cpu on the gguf fixture files, weights packed${SKIP}`, () => {
  const files = HAVE
    ? // The family folders of llama.cpp's F32/F16/Q8_0/Q4_K_M files (gguf/formats has its own test: cpu-formats).
      fs
        .readdirSync(path.join(FIX, "gguf"))
        .filter((f) => fs.existsSync(path.join(FIX, "gguf", f, "reference-F32.json")))
    : [];
  // The native GEMVs generated from the kernel IR (decisions 2300, 2310) at the CPU's widest kernel set, then Wasm only.
  for (const fam of files)
    for (const nativeKernels of ["native", "wasm"] as const) {
      for (const type of ["F32", "F16", "Q8_0", "Q4_K_M"]) {
        test(`${fam} ${type} (${nativeKernels} GEMVs): prompt logits within 1e-4 of the f64 forward of the stored weights`, () => {
          const dir = path.join(FIX, "gguf", fam);
          const ref = JSON.parse(fs.readFileSync(path.join(dir, `reference-${type}.json`), "utf8")) as {
            prompt_ids: number[];
          };
          const f64 = readF32(path.join(dir, `f64-logits-${type}.bin`));
          const llama = readF32(path.join(dir, `logits-${type}.bin`));
          const executor = createCpuExecutor({ threads: 2, native: nativeKernels === "native" });
          const engine = Engine.load(path.join(dir, `model-${type}.gguf`), {
            executor,
            context: 24,
            prefillChunk: 8,
            tokenizer: null,
          });
          try {
            const V = engine.config.vocabSize;
            const s = engine.openSession();
            let worst = 0,
              vsLlama = 0;
            // Steps end at positions 8, 16, 20: each returned row is that position's prompt logits.
            for (const end of [8, 16, ref.prompt_ids.length]) {
              const row = s.step(ref.prompt_ids.slice(s.length, end));
              const err = relErr(row, f64.subarray((end - 1) * V, end * V));
              const ll = llama.subarray((end - 1) * V, end * V);
              for (let i = 0; i < V; i++) vsLlama = Math.max(vsLlama, Math.abs(row[i]! - ll[i]!));
              worst = Math.max(worst, err);
              expect(err, `${type} position ${end - 1}`).toBeLessThanOrEqual(1e-4);
            }
            // Packed blocks are bound as bytes: the weights held are no more than the file (decoded f32 would be 3-7x).
            const held = executor.deviceBytes().weights,
              file = fs.statSync(path.join(dir, `model-${type}.gguf`)).size;
            expect(held).toBeLessThanOrEqual(file);
            console.log(
              `cpu gguf ${fam} ${type} ${nativeKernels}: max rel err ${worst.toExponential(2)}, max |dlogit| vs llama.cpp ${vsLlama.toExponential(3)}, weights held ${held} B of a ${file} B file`,
            );
          } finally {
            engine.close();
            executor.dispose();
          }
        }, 600_000);
      }
    }
});

describe("poot run | generate | logits --backend cpu on models/demo (the repository's own model)", () => {
  const demo = path.join(REPO_ROOT, "models", "demo");
  test("greedy ids and text equal transformers' reference; prompt logits within 1e-4 of graph-ir's evaluate", async () => {
    const { bufferIo, runCli } = await import("@poot/cli");
    const ref = JSON.parse(fs.readFileSync(path.join(demo, "reference.json"), "utf8")) as {
      prompt: string;
      prompt_ids: number[];
      greedy_ids: number[];
      greedy_text: string;
    };
    const poot = async (...argv: string[]): Promise<{ code: number; out: string; err: string }> => {
      const io = bufferIo();
      const code = await runCli(argv, { io });
      return { code, out: io.stdout(), err: io.stderr() };
    };
    const n = ref.greedy_ids.length;
    const g = await poot(
      "generate",
      demo,
      "--ids",
      ref.prompt_ids.join(","),
      "--max-tokens",
      String(n),
      "--greedy",
      "--ignore-eos",
      "--backend",
      "cpu",
    );
    expect(g.code, g.err).toBe(0);
    expect(JSON.parse(g.out)).toEqual(ref.greedy_ids);
    const r = await poot(
      "run",
      demo,
      "--prompt",
      ref.prompt,
      "--max-tokens",
      String(n),
      "--temperature",
      "0",
      "--ignore-eos",
      "--backend",
      "cpu",
    );
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe(`${ref.greedy_text}\n`);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-cpu-"));
    try {
      const got = path.join(tmp, "cpu.bin"),
        want = path.join(tmp, "ref.bin");
      const l = await poot("logits", demo, "--ids", ref.prompt_ids.join(","), "--out", got, "--backend", "cpu");
      expect(l.code, l.err).toBe(0);
      const e = await poot(
        "logits",
        demo,
        "--ids",
        ref.prompt_ids.join(","),
        "--out",
        want,
        "--backend",
        "eval-reference",
      );
      expect(e.code, e.err).toBe(0);
      expect(relErr(readF32(got), readF32(want))).toBeLessThanOrEqual(1e-4);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }, 600_000);
});
