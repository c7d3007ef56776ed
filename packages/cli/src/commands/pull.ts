// `poot pull org/name`: downloads a model from the Hugging Face Hub (or HF_ENDPOINT) into the hub cache that
// `poot run org/name` and Python tools read; resumable, verified, with a progress bar on a terminal only.
import { formatBytes, hubCacheDir, REPO_ID } from "../hub/cache.js";
import { pullRepo } from "../hub/download.js";
import { CliError } from "../errors.js";
import type { CommandModule } from "./index.js";
import { progressBar } from "./progress.js";

/** The `pull` subcommand. */
export const pull: CommandModule = {
  name: "pull",
  register: (program, io) => {
    program
      .command("pull")
      .description(
        "download a model from the Hugging Face Hub into the local HF cache (HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE)",
      )
      .argument("<repo>", "a Hub repo id, org/name")
      .option("--revision <rev>", "branch, tag or commit", "main")
      .option("--include <glob...>", "only the files matching these globs (e.g. '*.gguf')")
      .action(async (repo: string, o: { revision: string; include?: string[] }) => {
        if (!REPO_ID.test(repo))
          throw new CliError("bad-input", `"${repo}" is not a Hub repo id (org/name)`, { command: "pull" });
        // Only the CLI reads the environment; the downloader takes it as options.
        const endpoint = process.env["HF_ENDPOINT"] || "https://huggingface.co";
        const token = process.env["HF_TOKEN"] || undefined;
        const cache = hubCacheDir();
        let bar: ReturnType<typeof progressBar> = null;
        let current = "";
        const r = await pullRepo({
          endpoint,
          repoId: repo,
          revision: o.revision,
          cache,
          ...(o.include === undefined ? {} : { include: o.include }),
          ...(token === undefined ? {} : { token }),
          onProgress: (file, done, total) => {
            if (file !== current) {
              bar?.stop();
              current = file;
              bar = progressBar(file.padEnd(24).slice(0, 24), Math.max(total, 1));
            }
            bar?.update(done);
          },
        });
        (bar as ReturnType<typeof progressBar>)?.stop();
        const total = r.files.reduce((a, f) => a + f.bytes, 0);
        const fetched = r.files.filter((f) => f.downloaded).length;
        io.err(
          `poot pull: ${repo}@${o.revision} (${r.commit.slice(0, 12)}): ${r.files.length} files, ${formatBytes(total)} (${fetched} downloaded, ${r.files.length - fetched} cached) in ${r.snapshot}\n`,
        );
      });
  },
};
