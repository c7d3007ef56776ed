// `poot run` in-process: greedy text equals the forward driver's greedy ids decoded by the tokenizer,
// seeds reproduce, stop strings cut, the speed summary is printed, and bad options exit 1 with a message.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { LoadedModel, loadTokenizer } from "@poot/models";
import { poot } from "./run-poot.js";
import { afterAll, describe, expect, test } from "vitest";
import { findDemoModel } from "../src/commands/backends.js";
import { fixture, needFixture } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf/llama3");
const FIX = fixture();
const HAVE = NO_FIXTURES === undefined;
const SUMMARY =
  /^prompt (\d+) tokens, generated (\d+) tokens \((eos|stop|length)\), prefill [\d.]+ tok\/s, decode [\d.]+ tok\/s \[(auto: (cuda|vulkan|wgpu|cpu)|eval)\]\n$/;

describe.skipIf(!HAVE)(`poot run on the llama3 fixture${HAVE ? "" : ` (skipped: ${NO_FIXTURES})`}`, () => {
  const dir = path.join(FIX, "hf", "llama3");
  const prompt = "The quick brown fox";

  test("greedy output is the forward driver's greedy continuation, decoded; the summary line follows on stderr", async () => {
    const tok = loadTokenizer(dir);
    const ids = tok.encode(prompt, { addSpecial: true });
    const m = LoadedModel.open(dir);
    const want = m.generate(ids, 10).ids;
    m.close();
    const r = await poot("run", dir, "--prompt", prompt, "--temperature", "0", "--max-tokens", "10", "--ignore-eos");
    expect(r.code).toBe(0);
    expect(r.out).toBe(`${tok.decode(want, { skipSpecial: true })}\n`);
    const s = SUMMARY.exec(r.err);
    expect(s, r.err).not.toBeNull();
    expect(Number(s![1])).toBe(ids.length);
    expect(Number(s![2])).toBe(10);
  }, 60_000);

  test("a seed reproduces sampled text; --stop cuts before the stop string", async () => {
    const args = [
      "run",
      dir,
      "--prompt",
      prompt,
      "--temperature",
      "1.2",
      "--max-tokens",
      "12",
      "--seed",
      "7",
      "--ignore-eos",
    ];
    const a = await poot(...args),
      b = await poot(...args);
    expect(a.code).toBe(0);
    expect(a.out).toBe(b.out);
    const text = a.out.slice(0, -1);
    const stop = text.slice(4, 6);
    const c = await poot(...args, "--stop", stop);
    expect(c.out).toBe(`${text.slice(0, text.indexOf(stop))}\n`);
    expect(c.err).toContain("(stop)");
  }, 60_000);

  test("--compiled runs graph-plan programs and gives the same greedy text", async () => {
    const args = ["run", dir, "--prompt", prompt, "--temperature", "0", "--max-tokens", "6", "--ignore-eos"];
    const plain = await poot(...args);
    const compiled = await poot(...args, "--compiled", "--target", "cuda");
    expect(compiled.code).toBe(0);
    expect(compiled.out).toBe(plain.out);
  }, 60_000);

  test.each([
    [["--temperature", "hot"], "--temperature must be a number"],
    [["--top-p", "2"], "poot: --top-p must be in (0, 1], got 2"],
    [["--max-tokens", "0"], "--max-tokens must be a positive integer"],
    [["--backend", "tpu"], 'unknown backend "tpu"'],
    [["--weights", "f8"], "--weights must be f32 or bf16"],
    [["--context", "3"], "the context holds 3"],
    [["--chat"], "no chat template"],
    [["--prompt", ""], "the prompt encodes to no tokens with the tokenizer of"],
    [["--compiled", "--target", "tpu"], "--target must be one of"],
  ])("%o exits 1: %s", async (extra, message) => {
    const r = await poot("run", dir, "--prompt", prompt, ...extra);
    expect(r.code).toBe(1);
    expect(r.err).toContain(message);
  });
});

describe("the default model", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-run-"));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test("is found by walking up from the package's own files, not from the cwd", () => {
    fs.mkdirSync(path.join(tmp, "models", "demo"), { recursive: true });
    fs.writeFileSync(path.join(tmp, "models", "demo", "config.json"), "{}");
    const deep = path.join(tmp, "packages", "serve", "dist");
    fs.mkdirSync(deep, { recursive: true });
    expect(findDemoModel(deep)).toBe(path.join(tmp, "models", "demo"));
    expect(findDemoModel(os.tmpdir() === "/" ? "/" : path.parse(tmp).root)).toBeNull();
  });

  const demo = findDemoModel();
  test.skipIf(demo === null)(
    "poot run with no MODEL uses models/demo: greedy text equals transformers' (plain and --chat)",
    async () => {
      const ref = JSON.parse(fs.readFileSync(path.join(demo!, "reference.json"), "utf8")) as {
        prompt: string;
        greedy_ids: number[];
        greedy_text: string;
        chat_messages: { content: string }[];
        chat_greedy_text: string;
        chat_greedy_ids: number[];
      };
      const r = await poot(
        "run",
        "--prompt",
        ref.prompt,
        "--temperature",
        "0",
        "--max-tokens",
        String(ref.greedy_ids.length),
        "--ignore-eos",
      );
      expect(r.code).toBe(0);
      expect(r.out).toBe(`${ref.greedy_text}\n`);
      expect(r.err).toMatch(SUMMARY);
      const c = await poot(
        "run",
        "--chat",
        "--prompt",
        ref.chat_messages[0]!.content,
        "--temperature",
        "0",
        "--max-tokens",
        String(ref.chat_greedy_ids.length),
      );
      expect(c.code).toBe(0);
      expect(c.out).toBe(`${ref.chat_greedy_text}\n`);
    },
    120_000,
  );
});

describe("--context past the model's positions", () => {
  const demo = findDemoModel();
  test.skipIf(demo === null)(
    "warns, naming the config's max_position_embeddings; within them, no warning",
    async () => {
      const max = (
        JSON.parse(fs.readFileSync(path.join(demo!, "config.json"), "utf8")) as {
          max_position_embeddings: number;
        }
      ).max_position_embeddings;
      const over = await poot("run", demo!, "-p", "hi", "-n", "1", "--backend", "cpu", "-c", String(max + 1));
      expect(over.code, over.err).toBe(0);
      expect(over.err.split("\n")[0]).toBe(
        `poot run: warning: --context ${max + 1} is past the model's ${max} positions (max_position_embeddings); text beyond them degrades`,
      );
      const within = await poot("run", demo!, "-p", "hi", "-n", "1", "--backend", "cpu", "-c", String(max));
      expect(within.err).not.toContain("warning");
    },
    120_000,
  );
});
