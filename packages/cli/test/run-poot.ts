// `poot <argv>` in-process for the CLI's tests: runCli with buffered stdout and stderr, as the binary would run.
import { bufferIo, runCli } from "@poot/cli";

/** Runs `poot ...argv` in this process; returns the exit code and what it wrote. */
export async function poot(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = bufferIo();
  const code = await runCli(argv, { io });
  return { code, out: io.stdout(), err: io.stderr() };
}
