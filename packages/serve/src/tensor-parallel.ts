// `--tp N` (decision 2501): N executors of the backend as one tensor-parallel group, after checking that the model's
// heads and intermediate sizes divide by N. The collectives run on the host, so only host backends take it here.
import { TensorParallelExecutor } from "@poot/executor";
import { checkTensorParallel, LoadedModel } from "@poot/models";
import type { ExecutorFactory } from "./command.js";
import { CliError } from "./errors.js";
import { cliErrors } from "./model-errors.js";

/** The flags `--tp` reads or refuses to combine with. */
export interface TensorParallelFlags {
  readonly tp?: string;
  readonly gpuLayers?: string;
  readonly place?: string;
  readonly deviceMemory?: string;
  readonly hostMemory?: string;
}

/** Backends whose ranks the host collectives serve (their memory is the host's). */
export const TENSOR_PARALLEL_BACKENDS: readonly string[] = ["cpu", "eval"];

/** Parses `--tp`: null when absent or 1, else the rank count; bad values and unsupported combinations refused. */
export function tensorParallelRanks(o: TensorParallelFlags, backend: string, command: string): number | null {
  if (o.tp === undefined) return null;
  const n = Number(o.tp);
  if (o.tp.trim() === "" || !Number.isSafeInteger(n) || n < 1)
    throw new CliError("bad-input", `--tp must be a positive integer, got "${o.tp}"`, { command });
  if (n === 1) return null;
  if (!TENSOR_PARALLEL_BACKENDS.includes(backend))
    throw new CliError(
      "bad-input",
      `--tp ${n} runs on ${TENSOR_PARALLEL_BACKENDS.join(" or ")} only: the ${backend} backend has no collectives yet (NCCL for cuda is issue #25)`,
      { command },
    );
  if (o.gpuLayers !== undefined || o.place !== undefined || o.deviceMemory !== undefined || o.hostMemory !== undefined)
    throw new CliError("bad-input", `--tp ${n} cannot be combined with --gpu-layers, --place or memory budgets`, {
      command,
    });
  return n;
}

/** The group of `ranks` executors of `backend` for MODEL, refused with one line when the model does not divide. */
export function tensorParallelExecutor(
  ranks: number,
  backend: string,
  model: string,
  weights: "f32" | "bf16",
  command: string,
  make: ExecutorFactory,
): TensorParallelExecutor {
  cliErrors(command, model, () => {
    const m = LoadedModel.open(model, { weights });
    try {
      checkTensorParallel(m.config, ranks);
    } finally {
      m.close();
    }
  });
  const made = [];
  try {
    for (let r = 0; r < ranks; r++) made.push(make(backend, command));
  } catch (err) {
    for (const e of made) e.dispose();
    throw err;
  }
  return new TensorParallelExecutor(made);
}
