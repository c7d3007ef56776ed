// GPU entry point: the `poot` CLI bundled from sources (packages/backend-cuda/tools/gpu-bundle.sh), for
// `poot bench | run | generate | logits --backend cuda` on the GPU machine, which has no Node install.
// The bundle must sit where an install has kernelgen's assets (`../assets` beside `cli/`, as gpu-bundle.sh lays
// it out): without them the planner's imported kernels are synthesized instead and a bench measures a program
// no user runs (issue #22), so it refuses to start.
import { runCli } from "@poot/cli";
import { missingImportedAssets } from "@poot/kernelgen";

const missing = missingImportedAssets();
if (missing.length > 0 && process.env.POOT_ALLOW_MISSING_ASSETS !== "1") {
  console.error(
    `poot (GPU bundle): ${missing.length} of kernelgen's assets are missing next to the bundle (${missing[0]}); ` +
      "copy packages/kernelgen/assets to ../assets beside cli/ (gpu-bundle.sh does), or set POOT_ALLOW_MISSING_ASSETS=1",
  );
  process.exit(2);
}
process.exit(await runCli(process.argv.slice(2)));
