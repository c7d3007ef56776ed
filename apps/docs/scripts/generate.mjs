// Everything the site generates before `astro build`: the CLI reference, the decision pages, the explorer's compile
// reports and kernels, the benchmark JSON, the playground bundle and the typedoc API reference.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { generateArchitecture } from "./gen/architecture.mjs";
import { generateBenchResults, generateBenchmarks } from "./gen/bench.mjs";
import { generateCli } from "./gen/cli.mjs";
import { generateDecisions } from "./gen/decisions.mjs";
import { generateExplorer } from "./gen/explorer.mjs";
import { GEN_DATA, GEN_PUBLIC, REPO } from "./gen/paths.mjs";
import { generatePlayground } from "./gen/playground.mjs";

const t0 = Date.now();
const step = async (name, fn) => {
  const t = Date.now();
  const r = await fn();
  console.log(`docs: ${name} (${Date.now() - t} ms)`);
  return r;
};
const api = !process.argv.includes("--no-api");
rmSync(GEN_DATA, { recursive: true, force: true });
// `--no-api` (the dev server) keeps the API reference a previous build wrote; typedoc is most of the build's time.
for (const d of ["kernels", "playground", "demo", ...(api ? ["api"] : [])])
  rmSync(join(GEN_PUBLIC, d), { recursive: true, force: true });
await step("CLI reference", generateCli);
await step("decision records", generateDecisions);
await step("architecture document", generateArchitecture);
await step("benchmarks JSON", generateBenchmarks);
await step("bench results (bench-results/*.json)", generateBenchResults);
await step("fusion explorer", generateExplorer);
await step("playground", generatePlayground);
if (api) {
  // typedoc over every package, into the site's static files (strict: a warning fails the build).
  await step("API reference (typedoc)", () =>
    execFileSync(
      process.execPath,
      [
        join(REPO, "node_modules/typedoc/bin/typedoc"),
        "--out",
        join(GEN_PUBLIC, "api"),
        "--treatValidationWarningsAsErrors",
        "--logLevel",
        "Warn",
      ],
      { cwd: REPO, stdio: "inherit" },
    ),
  );
}
console.log(`docs: generated in ${Date.now() - t0} ms`);
