// The public API as a user imports it: what works on a machine without a GPU, and the typed error that
// says there is no driver.
import { describe, expect, it } from "vitest";
import { CudaError, createCudaContext, loadDriver, openCudaDevice } from "@poot/backend-cuda";
import { gemvRowsBf16, gemvRowsGrid } from "./row-gemvs.js";

describe("@poot/backend-cuda without a driver", () => {
  it("reports a missing driver library as CudaError no-driver naming the path", () => {
    const path = "/nonexistent/libcuda.so.1";
    for (const open of [
      () => loadDriver(path),
      () => openCudaDevice({ libraryPath: path }),
      () => createCudaContext({ libraryPath: path }),
    ]) {
      let err: unknown;
      try {
        open();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CudaError);
      expect((err as CudaError).code).toBe("no-driver");
      expect((err as CudaError).message).toContain(path);
    }
  });

  it("sizes row-GEMV grids at 8 rows per 256-thread workgroup", () => {
    expect(gemvRowsGrid(128256)).toEqual([16032, 1, 1]);
    expect(gemvRowsGrid(9)).toEqual([2, 1, 1]);
    expect(gemvRowsBf16.workgroupSize).toEqual([256, 1, 1]);
  });
});
