// The one place the docs site reads the `poot` CLI from: its commander program, the compile report and the kernel
// emitter. When the CLI moves to another package, re-point these imports and nothing else in the site changes.
import * as cli from "@poot/cli";

/** The npm package that owns the `poot` command definitions. */
export const CLI_PACKAGE = "@poot/cli";
/** The `poot` program as commander builds it (the same object `poot --help` prints). */
export const createProgram = cli.createProgram;
/** Runs `poot ARGV...` in-process and returns the exit code (output goes to `io`). */
export const runCli = cli.runCli;
/** An io that records what a command prints. */
export const bufferIo = cli.bufferIo;
/** Traces a model folder, .gguf or bare config.json the way `poot compile` does. */
export const traceModelFile = cli.trace;
/** The `--json` report of `poot compile`. */
export const compileReport = cli.compileReport;
/** Compiles a graph for a codegen target's backend, as `poot kernels` does. */
export const compileFor = cli.compileFor;
/** Every distinct kernel of a program lowered for one target, with the plans that launch it. */
export const emitKernels = cli.emitKernels;
/** The codegen targets `poot kernels` writes. */
export const KERNEL_TARGETS = cli.KERNEL_TARGETS;
