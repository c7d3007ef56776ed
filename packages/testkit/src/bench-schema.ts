// The JSON Schema of a benchmark result file (schema/poot-bench-result-1.schema.json) and an ajv check against it:
// what a reader outside TypeScript (the docs generator, a GPU machine's script, another tool) can validate with.
import * as fs from "node:fs";
import * as path from "node:path";
import { Ajv } from "ajv";
import { REPO_ROOT } from "./root.js";

/** Path of the JSON Schema (draft-07) of `poot-bench-result/1`. */
export const BENCH_RESULT_JSON_SCHEMA_FILE: string = path.join(
  REPO_ROOT,
  "packages",
  "testkit",
  "schema",
  "poot-bench-result-1.schema.json",
);

let compiled: ((x: unknown) => string[]) | undefined;

/**
 * The schema's complaints about `x` (one line each: the JSON pointer of the field and what is wrong), or an empty list
 * when `x` is a valid `poot-bench-result/1` record. The cross-references (unique case ids, anchors that exist) are
 * checked by `validateBenchResult`, not here.
 */
export function benchResultSchemaErrors(x: unknown): string[] {
  if (compiled === undefined) {
    const ajv = new Ajv({ allErrors: true, allowUnionTypes: true });
    const check = ajv.compile(JSON.parse(fs.readFileSync(BENCH_RESULT_JSON_SCHEMA_FILE, "utf8")));
    compiled = (y) =>
      check(y) ? [] : (check.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`);
  }
  return compiled(x);
}
