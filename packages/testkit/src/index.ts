/**
 * @poot/testkit: the test-only helpers of the poot workspace (private, never published). One locator for the
 * reference data under the repository's `fixtures/` folder; no test builds a path to fixture files by hand.
 *
 * ```ts
 * import { describeWithFixtures, fixture } from "@poot/testkit";
 * describeWithFixtures("llama3 against transformers", ["hf/llama3"], () => {
 *   test("logits", () => { const model = LoadedModel.open(fixture("hf/llama3")); ... });
 * });
 * ```
 *
 * When the environment variable `CI` is set, a missing fixture fails the test run with a message naming the
 * file; elsewhere the tests that need it are skipped with that message. (Test tooling, not a library: reading
 * the environment here is the point.)
 * @packageDocumentation
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe } from "vitest";
import { FixtureError } from "./errors.js";
import { ensureGenerated } from "./generated.js";
import { FIXTURES_ROOT } from "./root.js";

export { argmax, relErr } from "./compare.js";
export { rng } from "./random.js";
export { FixtureError, type FixtureErrorCode } from "./errors.js";
export { npmInstall, packWorkspace } from "./install.js";
export { REPO_ROOT } from "./root.js";
export { trackVulkanObjects, type VulkanObjectCounts, type VulkanObjectLedger } from "./vulkan-ledger.js";
export {
  BENCH_RESULT_SCHEMA,
  BENCH_RESULTS_DIR,
  BenchResultError,
  benchMachine,
  figure,
  gitCommit,
  loadSampler,
  median,
  ratiosOf,
  readBenchResult,
  readBenchResults,
  validateBenchResult,
  writeBenchResult,
  type BenchAnchor,
  type BenchCase,
  type BenchFigure,
  type BenchMachine,
  type BenchResult,
  type BenchResultInput,
} from "./bench-result.js";
export { BENCH_RESULT_JSON_SCHEMA_FILE, benchResultSchemaErrors } from "./bench-schema.js";

/** Whether this run is CI (`CI` set to anything but "", "0" or "false"): missing fixtures then fail. */
export function isCI(): boolean {
  const v = process.env["CI"];
  return v !== undefined && v !== "" && v !== "0" && v.toLowerCase() !== "false";
}

function relative(parts: readonly string[]): string {
  const rel = path.posix.normalize(parts.join("/").replace(/\\/g, "/")).replace(/^\/+|\/+$/g, "");
  if (rel === ".") return "";
  if (rel.startsWith(".."))
    throw new FixtureError("missing", `fixture path ${parts.join("/")} leaves the fixtures folder`);
  return rel;
}

/**
 * Absolute path of a file or folder under the repository's `fixtures/` folder, e.g. `fixture("hf/llama3")`
 * or `fixture("gguf", "qwen3", "model-F32.gguf")` (parts are joined with `/`). Files that the repository
 * regenerates instead of storing (fixtures/generated.json) are made first when absent. The path is returned
 * whether or not it exists: guard with {@link needFixture} or {@link describeWithFixtures}.
 */
export function fixture(...parts: string[]): string {
  const rel = relative(parts);
  ensureGenerated(rel);
  return rel === "" ? FIXTURES_ROOT : path.join(FIXTURES_ROOT, rel);
}

/**
 * Checks that the fixtures `rels` exist. Returns undefined when they all do, else the message naming the first
 * missing one (for `test.skipIf` / `describe.skipIf`); under CI ({@link isCI}) it throws that message instead.
 */
export function needFixture(...rels: string[]): string | undefined {
  for (const rel of rels) {
    const abs = fixture(rel);
    if (!fs.existsSync(abs)) {
      const msg = `fixture missing: ${path.relative(path.dirname(FIXTURES_ROOT), abs)}`;
      if (isCI()) throw new FixtureError("missing", `${msg} (CI set: fixture tests must run)`);
      return msg;
    }
  }
  return undefined;
}

/**
 * `describe(name, fn)` when every fixture of `rels` exists; otherwise skipped with the message of
 * {@link needFixture} in its name, or (under CI) a failure naming the missing file.
 */
export function describeWithFixtures(name: string, rels: readonly string[], fn: () => void): void {
  const why = needFixture(...rels);
  describe.skipIf(why !== undefined)(why === undefined ? name : `${name} (skipped: ${why})`, fn);
}
