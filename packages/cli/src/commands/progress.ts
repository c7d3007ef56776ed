// Progress bars (cli-progress) for model load and compile, drawn on stderr only when it is a terminal so
// pipes, logs and tests see none.
import cliProgress from "cli-progress";

/** A started bar, or null when stderr is not a terminal. */
export function progressBar(label: string, total: number): cliProgress.SingleBar | null {
  if (process.stderr.isTTY !== true) return null;
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {value}/{total}`, stream: process.stderr, clearOnComplete: true, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return bar;
}
