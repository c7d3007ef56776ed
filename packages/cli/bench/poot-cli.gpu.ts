// GPU entry point: the `poot` CLI bundled from sources (packages/backend-cuda/tools/gpu-bundle.sh), for
// `poot bench | run | generate | logits --backend cuda` on the GPU machine, which has no Node install.
import { runCli } from "@poot/cli";

process.exit(await runCli(process.argv.slice(2)));
