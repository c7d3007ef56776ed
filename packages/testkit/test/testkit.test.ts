// The locator against the repository's own fixtures folder: paths, the CI rule (planted missing fixture) and the
// regenerated GGUF files against the sha256 of the originals in fixtures/generated.json; rng against the C mulberry32.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, test, vi } from "vitest";
import { FixtureError, fixture, isCI, needFixture, relErr, rng } from "@poot/testkit";

afterEach(() => vi.unstubAllEnvs());

describe("fixture()", () => {
  test("resolves parts or a slash path to the same absolute path under fixtures/", () => {
    const a = fixture("hf/llama3"),
      b = fixture("hf", "llama3");
    expect(a).toBe(b);
    expect(path.isAbsolute(a)).toBe(true);
    expect(fs.existsSync(path.join(a, "config.json"))).toBe(true);
    expect(path.basename(path.dirname(path.dirname(a)))).not.toBe("shared");
  });

  test("refuses a path that leaves the fixtures folder", () => {
    expect(() => fixture("../package.json")).toThrow(/leaves the fixtures folder/);
  });
});

describe("needFixture()", () => {
  test("present fixtures: undefined", () => {
    vi.stubEnv("CI", "");
    expect(needFixture("hf/llama3", "configs/llama-3.2-1b.json")).toBeUndefined();
  });

  test("planted missing fixture outside CI: a skip message naming the file", () => {
    vi.stubEnv("CI", "");
    expect(isCI()).toBe(false);
    expect(needFixture("hf/llama3", "hf/no-such-family")).toBe("fixture missing: fixtures/hf/no-such-family");
  });

  test("planted missing fixture under CI: fails naming the file", () => {
    vi.stubEnv("CI", "true");
    expect(isCI()).toBe(true);
    expect(() => needFixture("hf/no-such-family")).toThrow(FixtureError);
    expect(() => needFixture("hf/no-such-family")).toThrow(
      "fixture missing: fixtures/hf/no-such-family (CI set: fixture tests must run)",
    );
  });
});

describe("regenerated GGUF fixtures (fixtures/generated.json)", () => {
  const list = JSON.parse(fs.readFileSync(fixture("generated.json"), "utf8")) as {
    files: { path: string; sha256: string; bytes: number }[];
  };
  test.each(list.files.map((f) => [f.path, f] as const))("%s matches the recorded sha256 of the original", (rel, f) => {
    const file = fixture(rel);
    const bytes = fs.readFileSync(file);
    expect(bytes.byteLength).toBe(f.bytes);
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(f.sha256);
  });

  test("a folder holding generated files has them all after fixture(folder)", () => {
    const dir = fixture("gguf/qwen3-w256");
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => f.startsWith("model-"))
        .sort(),
    ).toEqual(["model-F16.gguf", "model-F32.gguf", "model-Q4_K_M.gguf", "model-Q8_0.gguf"]);
  });
});

describe("rng()", () => {
  // The first outputs of Tommy Ettinger's published C mulberry32 (compiled with gcc 12 from its source) for seeds 1
  // and 42, over 2^32: the generator every package's tests draw from is that one.
  const C_OUTPUTS: Record<number, number[]> = {
    1: [2693262067, 11749833, 2265367787, 4213581821],
    42: [2581720956, 1925393290, 3661312704, 2876485805],
  };
  test.each([1, 42])("seed %i gives the C reference's sequence", (seed) => {
    const r = rng(seed);
    expect(C_OUTPUTS[seed]!.map(() => r())).toEqual(C_OUTPUTS[seed]!.map((u) => u / 4294967296));
  });

  test("planted: another seed, or a second generator stepped once more, differs", () => {
    const r = rng(2);
    expect(C_OUTPUTS[1]!.map(() => r())).not.toEqual(C_OUTPUTS[1]!.map((u) => u / 4294967296));
    const s = rng(1);
    s();
    expect(s()).not.toBe(C_OUTPUTS[1]![0]! / 4294967296);
  });
});

describe("relErr()", () => {
  test("max |a − ref| / max |ref|; planted: a result of another length throws instead of comparing a prefix", () => {
    expect(relErr([1, 2, 4.5], [1, 2, 4])).toBe(0.125);
    expect(() => relErr([1, 2], [1, 2, 4])).toThrow("relErr: 2 values against a reference of 3");
    expect(() => relErr([1, 2, 4, 9], [1, 2, 4])).toThrow("relErr: 4 values against a reference of 3");
  });
});
