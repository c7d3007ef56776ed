// Which backends work on this machine, and `--backend auto`: the first real GPU among CUDA, Vulkan and WebGPU,
// else the CPU backend. A device that is a CPU emulation (Mesa's llvmpipe behind Vulkan or Dawn) is available
// but never chosen by `auto`: the CPU backend is faster there.
import * as os from "node:os";
import { isGpuBackend, loadGpuModule, loadedGpuModule, GPU_PACKAGES, type GpuBackend } from "./gpu-modules.js";

/** What `poot backends` says about one backend. */
export interface BackendStatus {
  /** The `--backend` name. */
  readonly name: string;
  /** Whether it can run here, or the first reason it cannot. */
  readonly status: "available" | "missing package" | "no driver" | "no device";
  /** The device it would run on (GPU name, CPU model), or null when none. */
  readonly device: string | null;
  /** True for a hardware GPU (what `auto` picks); false for the host and for CPU emulations of a GPU API. */
  readonly gpu: boolean;
  /** One line: the reason it is not available, or a remark. */
  readonly detail: string;
}

/** The order `auto` tries the GPU backends in. */
export const AUTO_ORDER: readonly GpuBackend[] = ["cuda", "vulkan", "wgpu"];

/** What a backend is, for `poot backends` and `--help`. */
export const BACKEND_ROLES: Readonly<Record<string, string>> = {
  auto: "the first GPU of cuda, vulkan, wgpu, else cpu (the default)",
  cuda: "NVIDIA GPUs through the CUDA driver",
  rocm: "AMD GPUs through HIP (gfx90a, gfx942, gfx1100; not yet run on an AMD GPU, so auto never picks it)",
  vulkan: "GPUs through Vulkan",
  wgpu: "GPUs through WebGPU (Dawn, the `webgpu` package)",
  cpu: "the CPU: Wasm SIMD kernels and native GEMVs on worker threads",
  eval: "the float64 reference evaluator (slow; for checking)",
  "eval-reference": "graph-ir's evaluate every step, nothing folded (slowest)",
  interp: "the compiled program in the kernel IR interpreter (very slow; for checking)",
};

function host(name: string, detail: string): BackendStatus {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() ?? "unknown CPU";
  return { name, status: "available", device: `${model} (${os.availableParallelism()} threads)`, gpu: false, detail };
}

function probeCuda(): BackendStatus {
  const cuda = loadedGpuModule("cuda")!;
  try {
    const dev = cuda.openCudaDevice();
    const name = dev.info.name;
    dev.dispose();
    return { name: "cuda", status: "available", device: name, gpu: true, detail: "" };
  } catch (err) {
    if (err instanceof cuda.CudaError && err.code === "no-driver") {
      const noDevice = /no CUDA device/.test(err.message);
      return {
        name: "cuda",
        status: noDevice ? "no device" : "no driver",
        device: null,
        gpu: false,
        detail: err.message,
      };
    }
    return { name: "cuda", status: "no device", device: null, gpu: false, detail: (err as Error).message };
  }
}

/** The ROCm runtime and its first GPU; `rocmPath` is ROCM_PATH (read by the CLI, passed to the library). */
function probeRocm(rocmPath: string | undefined): BackendStatus {
  const rocm = loadedGpuModule("rocm")!;
  try {
    const hip = rocm.HipRuntime.open(rocmPath === undefined ? {} : { rocmPath });
    // A GPU the backend plans no code objects for is "no device" (RocmError no_code_object, caught below).
    rocm.rocmPlanCaps(hip.gcnArchName);
    // Not `gpu: true`: auto must not pick a backend that has never run on an AMD GPU (issue #24).
    return {
      name: "rocm",
      status: "available",
      device: hip.gcnArchName,
      gpu: false,
      detail: "HIP runtime and GPU found; the ROCm executor has not yet run on an AMD GPU (auto does not pick it)",
    };
  } catch (err) {
    if (err instanceof rocm.RocmError && err.code === "no_runtime")
      return { name: "rocm", status: "no driver", device: null, gpu: false, detail: err.message };
    return { name: "rocm", status: "no device", device: null, gpu: false, detail: (err as Error).message };
  }
}

function probeVulkan(): BackendStatus {
  const r = loadedGpuModule("vulkan")!.probeVulkan();
  if (!r.ok)
    return {
      name: "vulkan",
      status: /loader|libvulkan|INCOMPATIBLE_DRIVER/i.test(r.reason) ? "no driver" : "no device",
      device: null,
      gpu: false,
      detail: r.reason,
    };
  const best = r.devices.find((d) => d.type === "discrete") ?? r.devices.find((d) => d.type !== "cpu") ?? r.devices[0]!;
  const gpu = best.type !== "cpu";
  return {
    name: "vulkan",
    status: "available",
    device: `${best.name} (${best.type})`,
    gpu,
    detail: gpu ? "" : "a CPU emulation: auto prefers the cpu backend",
  };
}

async function probeWgpu(): Promise<BackendStatus> {
  const wgpu = loadedGpuModule("wgpu")!;
  let gpu: Awaited<ReturnType<typeof wgpu.nodeGpu>>;
  try {
    gpu = await wgpu.nodeGpu();
  } catch (err) {
    return {
      name: "wgpu",
      status: "missing package",
      device: null,
      gpu: false,
      detail: `${(err as Error).message.split(":")[0]} (npm install webgpu)`,
    };
  }
  const adapter = await gpu.requestAdapter();
  if (adapter === null)
    return {
      name: "wgpu",
      status: "no device",
      device: null,
      gpu: false,
      detail: "WebGPU offers no adapter (no GPU driver; on Linux Dawn needs Vulkan)",
    };
  const info = adapter.info as {
    vendor: string;
    architecture: string;
    device: string;
    description: string;
    isFallbackAdapter?: boolean;
  };
  const emulated =
    info.isFallbackAdapter === true || info.architecture === "software" || /llvmpipe|swiftshader/i.test(info.device);
  const device = info.description || info.device || info.vendor || "WebGPU adapter";
  return {
    name: "wgpu",
    status: "available",
    device,
    gpu: !emulated,
    detail: emulated ? "a CPU emulation: auto prefers the cpu backend" : "",
  };
}

/**
 * WebGPU's status without starting Dawn, when `earlier` shows Linux has no Vulkan driver: Dawn runs on Vulkan there,
 * and starting it anyway only prints the Vulkan loader's warnings on stderr (on every `--backend auto` run).
 */
function wgpuWithoutVulkan(earlier: readonly BackendStatus[]): BackendStatus | null {
  const vulkan = earlier.find((s) => s.name === "vulkan");
  if (os.platform() !== "linux" || vulkan?.status !== "no driver") return null;
  return {
    name: "wgpu",
    status: "no device",
    device: null,
    gpu: false,
    detail: "on Linux Dawn needs Vulkan, which has no driver here (see vulkan)",
  };
}

/**
 * The status of one backend; never throws for a missing package, driver or device. `earlier`: the statuses already
 * probed in this process (wgpu on Linux follows vulkan's).
 */
export async function probeBackend(name: string, earlier: readonly BackendStatus[] = []): Promise<BackendStatus> {
  if (name === "cpu") return host(name, "");
  if (!isGpuBackend(name)) return host(name, "reference; for checking, never chosen by auto");
  const load = await loadGpuModule(name);
  if (!load.ok) return { name, status: "missing package", device: null, gpu: false, detail: load.reason };
  if (name === "cuda") return probeCuda();
  if (name === "rocm") return probeRocm(process.env["ROCM_PATH"]);
  if (name === "vulkan") return probeVulkan();
  return wgpuWithoutVulkan(earlier) ?? probeWgpu();
}

/** How many times {@link resolveAuto} has probed in this process (tests check bad flags fail before any probe). */
export let autoProbes = 0;

/** The backend `auto` stands for here, with the statuses it looked at (the GPU backends it tried, in order). */
export async function resolveAuto(): Promise<{ readonly backend: string; readonly tried: readonly BackendStatus[] }> {
  autoProbes++;
  const tried: BackendStatus[] = [];
  for (const name of AUTO_ORDER) {
    // Dawn runs on Vulkan on Linux: when Vulkan sees only an emulation, WebGPU would too.
    if (
      name === "wgpu" &&
      os.platform() === "linux" &&
      tried.some((t) => t.name === "vulkan" && t.status === "available")
    )
      continue;
    const st = await probeBackend(name, tried);
    tried.push(st);
    if (st.status === "available" && st.gpu) return { backend: name, tried };
  }
  return { backend: "cpu", tried };
}

export { GPU_PACKAGES };
