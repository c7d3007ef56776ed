// The GGUF fixtures the repository does not store (fixtures/generated.json) come back byte for byte from
// their HF weights through this package's GGUF writer; the check that guards them rejects a changed weight.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { fixture } from "@poot/testkit";
import { buildFixtureGGUF, readGeneratedList, regenerate, sha256 } from "../scripts/fixture-gguf.js";
import { buildFixtureSafetensors, type GeneratedSafetensors } from "../scripts/fixture-safetensors.js";

const root = path.dirname(fixture("generated.json"));
const list = readGeneratedList(root);

describe("regenerated fixtures (GGUF files, widened float32 safetensors)", () => {
  test.each(list.map((s) => [s.path, s] as const))("%s: same bytes as the original (recorded sha256)", (_, spec) => {
    // Widened safetensors come first in generated.json: the GGUF entries of gguf/llama3 and gguf/qwen3 read them.
    const bytes =
      (spec.type as string) === "safetensors-f32"
        ? buildFixtureSafetensors(root, spec as unknown as GeneratedSafetensors)
        : buildFixtureGGUF(root, spec);
    expect(bytes.byteLength).toBe(spec.bytes);
    expect(sha256(bytes)).toBe(spec.sha256);
  });

  test("planted violation: one weight changed by one bf16 step fails the check, naming the file", () => {
    const spec = list.find((s) => s.path === "gguf/llama3-w256/model-Q8_0.gguf")!;
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-regen-"));
    try {
      const src = path.join(tmp, spec.source);
      fs.mkdirSync(src, { recursive: true });
      for (const f of fs.readdirSync(path.join(root, spec.source)))
        fs.copyFileSync(path.join(root, spec.source, f), path.join(src, f));
      const w = fs.readFileSync(path.join(src, spec.weights));
      w[w.byteLength - 1]! ^= 0x01;
      fs.writeFileSync(path.join(src, spec.weights), w);
      expect(() => regenerate(tmp, spec)).toThrow(
        `fixtures/${spec.path}: regenerated file differs from the recorded original`,
      );
      expect(fs.existsSync(path.join(tmp, spec.path))).toBe(false);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  test("planted violation: a recorded llama3 RoPE factor off by 1e-4 is refused", () => {
    const spec = list.find((s) => s.ropeFreqs !== undefined)!;
    const bad = { ...spec, ropeFreqs: spec.ropeFreqs!.map((v, i) => (i === 4 ? v * 1.0001 : v)) };
    expect(() => buildFixtureGGUF(root, bad)).toThrow(
      "recorded ropeFreqs differ from the computed llama3 factors by more than 1e-6 (index 4)",
    );
  });
});
