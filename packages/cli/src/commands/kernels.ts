// `poot kernels [MODEL] --target wgsl|ptx|spirv|amdgpu|wasm --out DIR [--validate]`: writes every kernel of the
// compiled model as `<kernel>.<ext>`; with --validate, checks each file on disk with the target's own validator.
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openDawnDevice, type DawnDevice, type TargetName, type ValidateOptions } from "@poot/codegen";
import { CliError } from "../errors.js";
import { graphKind, trace } from "./compile.js";
import type { CommandModule } from "./index.js";
import { compileFor, emitKernels, KERNEL_TARGETS } from "./kernels-emit.js";
import { KERNEL_EXT, mapLimited, passed, validateKernelFile, validationReport } from "./kernels-validate.js";

interface KernelsFlags {
  target: string;
  out: string;
  validate?: boolean;
  mode: string;
  tokens?: string;
  jobs: string;
}

const fail = (message: string, file?: string): CliError =>
  new CliError("bad-input", message, { command: "kernels", ...(file === undefined ? {} : { file }) });

/** Writes the kernels of `model`; returns the file stems written. */
function writeKernels(model: string, target: TargetName, o: KernelsFlags, out: string): string[] {
  if (o.mode !== "decode" && o.mode !== "prefill") throw fail(`--mode must be decode or prefill, got "${o.mode}"`);
  const graph = trace(
    model,
    graphKind({ mode: o.mode, batch: "1", context: "2048", ...(o.tokens === undefined ? {} : { tokens: o.tokens }) }),
  );
  const kernels = emitKernels(compileFor(graph, target, o.mode, model), target, model);
  mkdirSync(out, { recursive: true });
  for (const k of kernels) {
    const code = k.code;
    writeFileSync(join(out, `${k.name}.${KERNEL_EXT[target]}`), code.binary ?? code.text ?? "");
  }
  return kernels.map((k) => k.name);
}

/** Opens a WebGPU device for Tint; the Vulkan driver comes from VK_DRIVER_FILES (lavapipe on machines without a GPU). */
async function wgslDevice(): Promise<{ options: ValidateOptions; dawn?: DawnDevice }> {
  const icd = process.env["VK_DRIVER_FILES"];
  const r = await openDawnDevice(icd === undefined || icd === "" ? {} : { vulkanDriverFiles: icd });
  // Without a device the WGSL runs report "unavailable" with this reason, and count as failures.
  return r.ok ? { options: { wgslDevice: r.dawn.device }, dawn: r.dawn } : { options: {} };
}

/** The `kernels` subcommand. */
export const kernelsCommand: CommandModule = {
  name: "kernels",
  register: (program, io) => {
    program
      .command("kernels")
      .description(
        "write every kernel of the compiled model for one target (--validate: check each with the target's validator)",
      )
      .argument(
        "[model]",
        "a Hugging Face model folder, a .gguf file, or a config.json; without it, --validate checks the kernel files already in --out",
      )
      .requiredOption("--target <target>", `code target: ${KERNEL_TARGETS.join(" | ")}`)
      .requiredOption(
        "--out <dir>",
        "folder for the kernel files (<kernel>.wgsl|ptx|spv|ll|wasm; with --validate, AMDGPU also <kernel>.<gpu>.hsaco)",
      )
      .option(
        "--validate",
        "run the target's validator on each file written (ptxas sm_90+sm_80, spirv-val vulkan1.1, llc+ld.lld gfx90a/gfx942/gfx1100 writing the .hsaco, Tint through Dawn, WebAssembly.validate); exit 1 on any failure",
      )
      .option("--mode <mode>", "decode | prefill", "decode")
      .option("--tokens <n>", "tokens per step (decode default 1, prefill default 16)")
      .option("--jobs <n>", "validators run at once", "2")
      .action(async (model: string | undefined, o: KernelsFlags) => {
        if (!(KERNEL_TARGETS as readonly string[]).includes(o.target))
          throw fail(`--target must be one of ${KERNEL_TARGETS.join(", ")}, got "${o.target}"`);
        const target = o.target as TargetName;
        const jobs = Number(o.jobs);
        if (!Number.isSafeInteger(jobs) || jobs < 1) throw fail(`--jobs must be a positive integer, got "${o.jobs}"`);
        const ext = KERNEL_EXT[target];
        let names: string[];
        if (model !== undefined) {
          names = writeKernels(model, target, o, o.out);
          io.out(`wrote ${names.length} ${target} kernels to ${o.out}\n`);
        } else {
          if (o.validate !== true)
            throw fail("give a MODEL to write kernels, or --validate to check the files in --out");
          let files: string[];
          try {
            files = readdirSync(o.out);
          } catch {
            throw new CliError("file-unreadable", `cannot read the folder ${o.out}`, {
              command: "kernels",
              file: o.out,
            });
          }
          names = files
            .filter((f) => f.endsWith(`.${ext}`))
            .map((f) => f.slice(0, -ext.length - 1))
            .sort();
          if (names.length === 0) throw fail(`no .${ext} files in ${o.out}`, o.out);
        }
        if (o.validate !== true) return;
        const dev = target === "wgsl" ? await wgslDevice() : { options: {} };
        let checks;
        try {
          checks = await mapLimited(names, jobs, (n) =>
            validateKernelFile(n, join(o.out, `${n}.${ext}`), target, dev.options),
          );
        } finally {
          dev.dawn?.dispose();
        }
        for (const c of checks) {
          for (const r of c.runs)
            if (r.result.status === "ok" && r.result.artifact !== undefined)
              writeFileSync(join(o.out, `${c.name}.${r.label}.hsaco`), r.result.artifact);
        }
        // AMDGPU code objects are what llc + ld.lld produce while checking the IR.
        const bad = checks.filter((c) => !passed(c)).length;
        io.out(validationReport(target, checks));
        if (bad > 0)
          throw new CliError("command-failed", `${bad} of ${checks.length} ${target} kernels failed validation`, {
            command: "kernels",
            file: o.out,
          });
      });
  },
};
