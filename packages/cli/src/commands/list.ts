// `poot list`: the models in the local Hugging Face cache, with their revisions and sizes.
import { formatBytes, hubCacheDir, listCache } from "../hub/cache.js";
import type { CommandModule } from "./index.js";

/** The `list` subcommand. */
export const list: CommandModule = {
  name: "list",
  register: (program, io) => {
    program
      .command("list")
      .description("list the models in the local Hugging Face cache (HF_HUB_CACHE / HF_HOME) with their sizes")
      .option("--json", "print a JSON array")
      .action((o: { json?: boolean }) => {
        const cache = hubCacheDir();
        const models = listCache(cache);
        if (o.json === true) {
          io.out(`${JSON.stringify(models, null, 1)}\n`);
          return;
        }
        if (models.length === 0) {
          io.err(`no models in ${cache} (\`poot pull org/name\` downloads one)\n`);
          return;
        }
        const w = Math.max(...models.map((m) => m.repoId.length));
        for (const m of models) {
          const refs =
            Object.entries(m.refs)
              .map(([r, c]) => `${r}=${c.slice(0, 8)}`)
              .join(" ") || m.snapshots.map((s) => s.slice(0, 8)).join(" ");
          io.out(
            `${m.repoId.padEnd(w)}  ${formatBytes(m.bytes).padStart(9)}  ${String(m.files).padStart(3)} files  ${refs}\n`,
          );
        }
      });
  },
};
