// Everything the ROCm device does short of the HIP runtime, as plain functions a test runs without a GPU: what a
// GPU's programs are lowered for (graph-plan's ROCM_ARCHS caps by gcnArchName), building a lowered kernel's code
// object for the GPU with llc + ld.lld (the code object picked by gcnArchName among the GPUs its instructions exist
// on), reading its metadata, and packing one launch's kernel arguments from it (decisions 2400, 2402).

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { amdgpuGpusFor } from "@poot/codegen";
import type { LoweredKernel, LoweringTarget } from "@poot/executor";
import { codegenCapsFor, fusionPolicy } from "@poot/executor/lowering";
import { defaultTarget, ROCM_ARCHS, type CompileOptions, type DeviceCaps as PlanCaps } from "@poot/graph-plan";
import { synthCapsFrom } from "@poot/kernelgen";
import { RocmError } from "../errors.js";
import { baseArch, pickCodeObject } from "../hip/arch.js";
import { packKernargs, signatureOf, type KernargSignature, type PackedKernargs } from "../kernargs.js";
import { readCodeObjectMetadata, type KernelMeta } from "../metadata.js";

/** The GPUs the ROCm backend plans and builds code objects for (graph-plan's ROCM_ARCHS). */
export const ROCM_GPUS: readonly string[] = Object.keys(ROCM_ARCHS).sort();

/**
 * The graph-plan caps of a GPU by its `gcnArchName` (feature suffixes ignored); a GPU the backend has no caps for
 * gets `no_code_object` naming its architecture and the ones supported.
 */
export function rocmPlanCaps(gcnArchName: string): PlanCaps {
  const arch = baseArch(gcnArchName);
  const caps = ROCM_ARCHS[arch];
  if (caps === undefined)
    throw new RocmError(
      "no_code_object",
      `no code objects are planned for this GPU (${gcnArchName}); the ROCm backend supports ${ROCM_GPUS.join(", ")}`,
      { arch: gcnArchName, available: ROCM_GPUS },
    );
  return defaultTarget("rocm", caps).caps as PlanCaps;
}

/**
 * What programs are lowered for on a GPU: AMDGPU LLVM IR with the GPU's caps (wave64 and MFMA on gfx90a/gfx942,
 * wave32 and WMMA on gfx1100), its matrix units handed to codegen, and graph-plan's ROCm fusion policy. Operands that
 * are also outputs are read from snapshots (work-groups may read what another already wrote, as on CUDA).
 */
export function rocmLowering(gcnArchName: string, compile: CompileOptions = {}): LoweringTarget {
  const plan = rocmPlanCaps(gcnArchName);
  const policy = fusionPolicy("rocm", compile);
  return {
    kind: "rocm",
    language: "amdgpu",
    plan,
    synth: synthCapsFrom(plan),
    codegen: codegenCapsFor("amdgpu", plan),
    ...policy,
    snapshotInPlace: true,
  };
}

/** Where {@link CodeObjectBuilder} finds `llc` and `ld.lld`. */
export interface ToolchainOptions {
  /** The ROCm root: its `llvm/bin` is searched first (ROCm ships its own LLVM). */
  readonly rocmPath?: string;
  /** Explicit tool paths (tests, or an LLVM elsewhere). */
  readonly llc?: string;
  readonly lld?: string;
  /** llvm-link, for {@link CodeObjectBuilder.prebuild} (without one, kernels are built one by one). */
  readonly llvmLink?: string;
}

/** The first candidate that runs with `--version`, or undefined. */
function findTool(candidates: readonly string[]): string | undefined {
  for (const c of candidates) {
    if (c.includes("/") && !existsSync(c)) continue;
    try {
      execFileSync(c, ["--version"], { stdio: "ignore" });
      return c;
    } catch {
      // next candidate
    }
  }
  return undefined;
}

/**
 * Builds code objects from AMDGPU LLVM IR synchronously (the Device contract is synchronous): `llc` to an ELF
 * relocatable, `ld.lld -shared` to the code object, as codegen's `assembleAmdgpu` does; results are kept by the
 * hash of (IR, GPU) for the builder's life.
 */
export class CodeObjectBuilder {
  readonly #options: ToolchainOptions;
  readonly #built = new Map<string, Uint8Array>();
  #tools: { llc: string; lld: string } | undefined;
  #link: string | null | undefined;

  constructor(options: ToolchainOptions = {}) {
    this.#options = options;
  }

  /** The tools found; throws `no_toolchain` naming every place tried. */
  tools(): { readonly llc: string; readonly lld: string } {
    if (this.#tools !== undefined) return this.#tools;
    const o = this.#options;
    const roots = [...(o.rocmPath !== undefined ? [join(o.rocmPath, "llvm/bin")] : []), "/opt/rocm/llvm/bin"];
    const llcs = [...(o.llc !== undefined ? [o.llc] : []), ...roots.map((r) => join(r, "llc")), "llc-19", "llc"];
    const llds = [
      ...(o.lld !== undefined ? [o.lld] : []),
      ...roots.map((r) => join(r, "ld.lld")),
      "ld.lld-19",
      "ld.lld",
    ];
    const llc = findTool(llcs),
      lld = findTool(llds);
    if (llc === undefined || lld === undefined)
      throw new RocmError(
        "no_toolchain",
        `no ${llc === undefined ? "llc" : "ld.lld"} to build AMDGPU code objects (tried ${(llc === undefined ? llcs : llds).join(", ")}); install ROCm's LLVM or LLVM 19`,
        { tried: llc === undefined ? llcs : llds },
      );
    this.#tools = { llc, lld };
    return this.#tools;
  }

  /** llvm-link (ROCm's, then LLVM 19's), or null without one. */
  #linker(): string | null {
    if (this.#link !== undefined) return this.#link;
    const o = this.#options;
    const roots = [...(o.rocmPath !== undefined ? [join(o.rocmPath, "llvm/bin")] : []), "/opt/rocm/llvm/bin"];
    this.#link =
      findTool([
        ...(o.llvmLink !== undefined ? [o.llvmLink] : []),
        ...roots.map((r) => join(r, "llvm-link")),
        "llvm-link-19",
        "llvm-link",
      ]) ?? null;
    return this.#link;
  }

  #key(ir: string, mcpu: string): string {
    return `${mcpu}:${createHash("sha256").update(ir).digest("hex")}`;
  }

  /**
   * Builds the kernels of one program for `mcpu` in one llvm-link + llc + ld.lld run: one code object holding every
   * kernel whose instructions exist on that GPU, kept for each kernel's IR so {@link build} returns it. Entry points
   * must be distinct within the batch (a program's are). Without llvm-link, or when the batch fails, nothing is kept
   * and {@link build} builds each kernel alone (so an error names its own kernel). Returns how many were batched.
   */
  prebuild(irs: readonly string[], mcpu: string): number {
    const todo = [...new Set(irs)].filter(
      (ir) => !this.#built.has(this.#key(ir, mcpu)) && amdgpuGpusFor(ir).includes(mcpu),
    );
    const link = this.#linker();
    if (todo.length < 2 || link === null) return 0;
    const { llc, lld } = this.tools();
    const dir = mkdtempSync(join(tmpdir(), "poot-rocm-co-"));
    try {
      const srcs = todo.map((ir, i) => {
        const f = join(dir, `k${i}.ll`);
        writeFileSync(f, ir);
        return f;
      });
      const bc = join(dir, "all.bc"),
        obj = join(dir, "all.o"),
        out = join(dir, "all.hsaco");
      execFileSync(link, ["-o", bc, ...srcs], { stdio: "ignore" });
      execFileSync(llc, ["-mtriple=amdgcn-amd-amdhsa", `-mcpu=${mcpu}`, "-O2", "-filetype=obj", "-o", obj, bc], {
        stdio: "ignore",
      });
      execFileSync(lld, ["-shared", "-o", out, obj], { stdio: "ignore" });
      const co = new Uint8Array(readFileSync(out));
      for (const ir of todo) this.#built.set(this.#key(ir, mcpu), co);
      return todo.length;
    } catch {
      return 0;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** The code object of `ir` for GPU `mcpu` (e.g. `gfx942`); throws `bad_code_object` with llc's or ld.lld's message. */
  build(ir: string, mcpu: string, kernel = "kernel"): Uint8Array {
    const key = this.#key(ir, mcpu);
    const have = this.#built.get(key);
    if (have !== undefined) return have;
    const { llc, lld } = this.tools();
    const dir = mkdtempSync(join(tmpdir(), "poot-rocm-co-"));
    try {
      const src = join(dir, "k.ll"),
        obj = join(dir, "k.o"),
        out = join(dir, "k.hsaco");
      writeFileSync(src, ir);
      const step = (tool: string, args: string[]): void => {
        try {
          execFileSync(tool, args, { stdio: ["ignore", "ignore", "pipe"] });
        } catch (e) {
          const text = String((e as { stderr?: Buffer }).stderr ?? (e as Error).message).trim();
          throw new RocmError(
            "bad_code_object",
            `kernel ${kernel}: ${tool} failed for ${mcpu}: ${text.split("\n")[0] ?? ""}`,
            { kernel, arch: mcpu },
          );
        }
      };
      step(llc, ["-mtriple=amdgcn-amd-amdhsa", `-mcpu=${mcpu}`, "-O2", "-filetype=obj", "-o", obj, src]);
      step(lld, ["-shared", "-o", out, obj]);
      const co = new Uint8Array(readFileSync(out));
      this.#built.set(key, co);
      return co;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** A lowered kernel built for one GPU: its code object, the kernel's metadata, and how the executor binds it. */
export interface RocmKernelImage {
  readonly kernel: LoweredKernel;
  /** The GPU architecture the code object is for (base name, e.g. `gfx942`). */
  readonly arch: string;
  readonly codeObject: Uint8Array;
  /** The kernel's entry in the code object's metadata. */
  readonly meta: KernelMeta;
  /** Buffers and uniforms as the kernarg segment takes them. */
  readonly signature: KernargSignature;
  /** Buffer names in binding order. */
  readonly buffers: readonly string[];
  /** Work-items per work-group. */
  readonly block: readonly [number, number, number];
}

/**
 * Builds `kernel`'s code object for the GPU `gcnArchName`: the candidates are the GPUs the kernel's instructions
 * exist on (codegen's `amdgpuGpusFor`: MFMA only on gfx90a/gfx942, WMMA only on gfx1100), the GPU's is picked
 * (`no_code_object` naming the GPU and the candidates otherwise), built, and its metadata read and checked against
 * the kernel's signature (`kernarg_mismatch`).
 */
export function buildKernelImage(
  kernel: LoweredKernel,
  gcnArchName: string,
  builder: CodeObjectBuilder,
): RocmKernelImage {
  const code = kernel.code;
  const ir = code.text;
  if (code.target !== "amdgpu" || ir === undefined)
    throw new RocmError("bad_code_object", `kernel ${kernel.name}: not AMDGPU LLVM IR (target ${code.target})`, {
      kernel: kernel.name,
    });
  const make = pickCodeObject(
    gcnArchName,
    Object.fromEntries(amdgpuGpusFor(ir).map((a) => [a, () => builder.build(ir, a, kernel.name)])),
  );
  const codeObject = make();
  const meta = readCodeObjectMetadata(codeObject).kernels.find((k) => k.name === code.entryPoint);
  if (meta === undefined)
    throw new RocmError("bad_code_object", `kernel ${kernel.name}: the code object has no kernel ${code.entryPoint}`, {
      kernel: kernel.name,
    });
  const signature = { ...signatureOf(code, kernel.uniforms), name: code.entryPoint };
  const buffers = code.bindings
    .filter((b): b is Extract<typeof b, { kind: "buffer" }> => b.kind === "buffer")
    .sort((a, b) => a.slot - b.slot)
    .map((b) => b.buffer);
  const [x, y, z] = code.workgroupSize;
  return { kernel, arch: baseArch(gcnArchName), codeObject, meta, signature, buffers, block: [x, y, z] };
}

/**
 * One launch's kernarg segment: the buffers' device addresses by the kernel's buffer names, the uniforms by name,
 * and the grid in work-groups, packed at the metadata's offsets (hidden block counts and group sizes from the grid
 * and the kernel's work-group size).
 */
export function packLaunch(
  image: RocmKernelImage,
  buffers: Readonly<Record<string, bigint>>,
  uniforms: Readonly<Record<string, number>>,
  grid: readonly [number, number, number],
): PackedKernargs {
  const name = image.kernel.name;
  const addresses = image.buffers.map((b) => {
    const a = buffers[b];
    if (a === undefined)
      throw new RocmError("kernarg_mismatch", `kernel ${name}: no buffer bound for ${b}`, { kernel: name });
    return a;
  });
  const values = image.signature.uniforms.map((u) => {
    const v = uniforms[u.name];
    if (v === undefined)
      throw new RocmError("kernarg_mismatch", `kernel ${name}: no value for uniform ${u.name}`, { kernel: name });
    return v;
  });
  return packKernargs(
    image.meta,
    image.signature,
    { buffers: addresses, uniforms: values },
    { grid, block: image.block },
  );
}
