// `poot logits | generate | tokenize | chat-template` run in-process against the fixtures: logits
// files against transformers' float64 logits, generated ids against the reference greedy ids, token ids
// against the HF tokenizers' reference, and a chat template against hand-written expected text.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { openSafetensors } from "@poot/models";
import { poot } from "./run-poot.js";
import { afterAll, describe, expect, test } from "vitest";
import { fixture, needFixture, relErr } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf", "gguf");
const FIX = fixture();
const HAVE = NO_FIXTURES === undefined;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-model-cmd-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe.skipIf(!HAVE)(`model commands on fixtures/${HAVE ? "" : ` (skipped: ${NO_FIXTURES})`}`, () => {
  for (const fam of ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"]) {
    const dir = path.join(FIX, "hf", fam);
    test(`${fam}: poot logits (f32 and bf16) and poot generate --greedy match the references`, async () => {
      const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      };
      const want = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("prompt_logits");
      for (const weights of ["f32", "bf16"]) {
        const out = path.join(tmp, `${fam}-${weights}.bin`);
        const r = await poot("logits", dir, "--ids", ref.prompt_ids.join(","), "--out", out, "--weights", weights);
        expect(r.code, r.err).toBe(0);
        expect(r.out).toMatch(
          new RegExp(
            `^logits f32\\[${ref.prompt_ids.length},\\d+\\] .* -> ${out.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\n$`,
          ),
        );
        const b = fs.readFileSync(out);
        expect(relErr(new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4), want)).toBeLessThanOrEqual(1e-4);
      }
      const g = await poot(
        "generate",
        dir,
        "--ids",
        ref.prompt_ids.join(","),
        "--max-tokens",
        String(ref.greedy_ids.length),
        "--greedy",
      );
      expect(g.code, g.err).toBe(0);
      expect(JSON.parse(g.out)).toEqual(ref.greedy_ids);
    });
  }

  test("poot generate on a GGUF file reproduces the reference greedy ids", async () => {
    const dir = path.join(FIX, "gguf", "qwen3");
    const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference-F32.json"), "utf8")) as {
      prompt_ids: number[];
      reference_greedy_ids: number[];
    };
    const g = await poot(
      "generate",
      path.join(dir, "model-F32.gguf"),
      "--ids",
      ref.prompt_ids.join(","),
      "--max-tokens",
      "16",
      "--greedy",
    );
    expect(g.code, g.err).toBe(0);
    expect(JSON.parse(g.out)).toEqual(ref.reference_greedy_ids);
  });

  // `generate --compiled --target T`: the graph-plan Programs of each target, staged on the eval executor (every
  // composite op by its reference semantics), give the ids of the primitive graph on eval and of transformers.
  test.each([
    ["hf/llama3", "cuda"],
    ["hf/qwen3", "wgpu"],
    ["hf/gemma3", "cpu"],
    ["gguf/llama3-w256/model-F32.gguf", "cuda"],
  ])("poot generate --compiled: %s compiled for %s gives the eval reference's greedy ids", async (rel, target) => {
    const model = fixture(rel);
    const gguf = rel.endsWith(".gguf");
    const ref = JSON.parse(
      fs.readFileSync(
        gguf ? path.join(path.dirname(model), "reference-F32.json") : path.join(model, "reference.json"),
        "utf8",
      ),
    ) as { prompt_ids: number[]; greedy_ids?: number[]; reference_greedy_ids?: number[] };
    const args = [
      "generate",
      model,
      "--ids",
      ref.prompt_ids.join(","),
      "--max-tokens",
      "16",
      "--greedy",
      "--ignore-eos",
    ];
    const primitive = await poot(...args);
    expect(primitive.code, primitive.err).toBe(0);
    const compiled = await poot(...args, "--compiled", "--target", target);
    expect(compiled.code, compiled.err).toBe(0);
    expect(JSON.parse(compiled.out)).toEqual(JSON.parse(primitive.out));
    // transformers' greedy ids for the HF families; the float64 numpy forward's for the 256-wide GGUF.
    expect(JSON.parse(compiled.out)).toEqual(gguf ? ref.reference_greedy_ids : ref.greedy_ids);
  });

  test("poot tokenize reproduces the HF tokenizers reference ids (byte-level BPE)", async () => {
    const dir = path.join(FIX, "hf", "tokenizer-bytelevel");
    const cases = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
      text: string;
      ids: number[];
    }[];
    for (const c of cases) {
      const r = await poot("tokenize", dir, "--text", c.text);
      expect(r.code, r.err).toBe(0);
      expect(JSON.parse(r.out), JSON.stringify(c.text)).toEqual(c.ids);
    }
  });

  test("poot chat-template renders tokenizer_config.json's template over a messages file", async () => {
    const dir = path.join(tmp, "chat-model");
    fs.mkdirSync(dir);
    fs.copyFileSync(path.join(FIX, "hf", "tokenizer-bytelevel", "tokenizer.json"), path.join(dir, "tokenizer.json"));
    const template =
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}";
    fs.writeFileSync(
      path.join(dir, "tokenizer_config.json"),
      JSON.stringify({ chat_template: template, bos_token: "<s>" }),
    );
    const msgs = path.join(tmp, "messages.json");
    fs.writeFileSync(
      msgs,
      JSON.stringify([
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ]),
    );
    const r = await poot("chat-template", dir, "--messages", msgs);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe("<s><system>Be brief.</system>\n<user>Hi</user>\n<assistant>");
    const bad = path.join(tmp, "bad.json");
    fs.writeFileSync(bad, JSON.stringify({ role: "user" }));
    const e = await poot("chat-template", dir, "--messages", bad);
    expect(e.code).toBe(1);
    expect(e.err).toContain("bad.json");
  });

  test("poot trace writes a decode graph that poot ir prints back", async () => {
    const out = path.join(tmp, "decode.json");
    const r = await poot("trace", path.join(FIX, "hf", "qwen35"), "--kind", "decode", "--context", "32", "--out", out);
    expect(r.code, r.err).toBe(0);
    // Qwen3.5 fixture: 2 full-attention layers (k, v) and 2 delta-net layers (conv, recurrent).
    expect(r.out).toMatch(/^decode: \d+ equations, \d+ dispatches, 8 states -> /);
    const p = await poot("ir", out);
    expect(p.code, p.err).toBe(0);
    expect(p.out).toContain('slot %0:i32[1] Token "ids"');
    expect(p.out).toMatch(/= dynamicupdateslice /);
    expect(p.out).toContain('state %23:f32[1,128,3] "layers.0.conv"  # layers.0.conv');
    expect((await poot("trace", path.join(FIX, "hf", "qwen35"), "--kind", "sideways")).code).toBe(1);
  });

  test("bad input is a one-line error with exit code 1", async () => {
    const dir = path.join(FIX, "hf", "llama3");
    const cases: [string[], RegExp][] = [
      [["logits", dir, "--ids", "1,x"], /--ids must be/],
      [["logits", dir, "--ids", "99999"], /outside the vocabulary/],
      [["logits", path.join(tmp, "nope"), "--ids", "1"], /nope/],
      [["logits", dir, "--ids", "1", "--backend", "tpu"], /unknown backend "tpu" \(available: .*cuda/],
      [["generate", dir, "--ids", "1", "--max-tokens", "2"], /--greedy/],
      [
        ["generate", dir, "--ids", "1", "--greedy", "--compiled", "--target", "tpu"],
        /--target must be one of .*cuda.*, got "tpu"/,
      ],
    ];
    for (const [argv, msg] of cases) {
      const r = await poot(...argv);
      expect(r.code, argv.join(" ")).toBe(1);
      expect(r.err).toMatch(/^poot: /);
      expect(r.err).toMatch(msg);
    }
  });
});
