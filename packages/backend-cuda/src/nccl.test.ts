// NCCL binding without a GPU: a missing libnccl is one `no-nccl` line (what `--tp` on cuda would say on a machine
// without NCCL); the machine with two H200s runs the collective itself (decision 2503 names that run).
import { describe, expect, it } from "vitest";
import { CudaError } from "./errors.js";
import { loadNccl, NCCL_DTYPES } from "./nccl.js";

describe("nccl", () => {
  it("refuses a missing library with one line naming it", () => {
    let err: unknown;
    try {
      loadNccl("libnccl-not-here.so.2");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CudaError);
    expect((err as CudaError).code).toBe("no-nccl");
    expect((err as CudaError).message).toMatch(/^no NCCL on this machine: cannot load libnccl-not-here\.so\.2/);
    expect((err as CudaError).message).not.toContain("\n");
  });

  it("maps the collective dtypes to nccl.h's ncclDataType_t", () => {
    // nccl.h: ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9.
    expect(NCCL_DTYPES).toEqual({ f16: 6, f32: 7, bf16: 9 });
  });
});
