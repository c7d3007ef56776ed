// The GPU bundles replace vitest with tools/vitest-shim.ts: every matcher that the suites run through it call must
// exist there (on the H200 a missing toBeGreaterThan failed the conformance suite's releaseWeights case and the CUDA
// decode-allocation test after their assertions had passed), and each matcher passes and fails as vitest's does.
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "@poot/testkit";
import { describe, expect as vexpect, it } from "vitest";
import { expect as shim } from "../tools/vitest-shim.js";

/** The suites bundled with the shim (gpu-bundle.sh, devices-bundle.sh, backend-vulkan's gpu-bundle.sh). */
const SUITES = ["packages/executor/src/conformance.ts", "packages/cli/test/cuda-decode-alloc.test.ts"];

/** The matcher names `source` calls on expect(...) (with or without `.not`). */
function matchersCalled(source: string): string[] {
  return [...new Set([...source.matchAll(/\)\s*\.(?:not\.)?(to[A-Z]\w*)\(/g)].map((m) => m[1]!))].sort();
}

/** Matchers `source` calls that the shim lacks. */
function missing(source: string): string[] {
  const have = Object.keys(shim(0));
  return matchersCalled(source).filter((m) => !have.includes(m));
}

describe("the vitest shim of the GPU bundles", () => {
  for (const file of SUITES)
    it(`has every matcher ${file} calls`, () => {
      const src = fs.readFileSync(path.join(REPO_ROOT, file), "utf8");
      vexpect(matchersCalled(src).length).toBeGreaterThan(0);
      vexpect(missing(src)).toEqual([]);
    });

  it("names a matcher it lacks (planted)", () => {
    vexpect(missing("expect(x).toBeGreaterThan(0); expect(y).toMatchInlineSnapshot();")).toEqual([
      "toMatchInlineSnapshot",
    ]);
  });

  it("compares as vitest does", () => {
    vexpect(() => shim(2).toBeGreaterThan(1)).not.toThrow();
    vexpect(() => shim(1).toBeGreaterThan(1)).toThrow("expected 1 to be > 1");
    vexpect(() => shim(1).toBeLessThan(2)).not.toThrow();
    vexpect(() => shim(2, "dispatches").toBeLessThan(2)).toThrow("dispatches: expected 2 to be < 2");
    vexpect(() => shim(2).toBeGreaterThanOrEqual(2)).not.toThrow();
    vexpect(() => shim(3).toBeLessThanOrEqual(2)).toThrow("to be <= 2");
  });
});
