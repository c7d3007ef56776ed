#!/usr/bin/env python3
# Runs PTX kernels emitted by @poot/codegen on an NVIDIA GPU (CuPy loads the PTX through the driver JIT) and
# compares the outputs with the kernel-dsl interpreter's. Input: a folder with index.json, <kernel>.ptx and
# <kernel>.<buffer>.in / .want files, as written by the codegen PTX dump. Exit status 1 on any mismatch.
import json
import sys

import cupy as cp
import numpy as np

DT = {"float32": np.float32, "int32": np.int32, "uint32": np.uint32, "uint16": np.uint16, "uint8": np.uint8, "int8": np.int8}
SCALAR = {"u32": np.uint32, "i32": np.int32, "f32": np.float32}


def main(folder: str) -> int:
    cases = json.load(open(f"{folder}/index.json"))
    failures = 0
    print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "driver", cp.cuda.runtime.driverGetVersion())
    for c in cases:
        name = c["name"]
        mod = cp.RawModule(path=f"{folder}/{name}.ptx")
        fn = mod.get_function(c["entry"])
        args, outs = [], []
        for a in c["args"]:
            if a["kind"] == "buffer":
                host = np.fromfile(f"{folder}/{name}.{a['name']}.in", dtype=DT[a["dtype"]])
                dev = cp.asarray(host if host.size else np.zeros(1, DT[a["dtype"]]))
                args.append(dev)
                if a["output"]:
                    outs.append((a, dev))
            else:
                args.append(SCALAR[a["kind"]](a["value"]))
        fn(tuple(c["grid"]), tuple(c["block"]), tuple(args))
        cp.cuda.runtime.deviceSynchronize()
        for a, dev in outs:
            got = cp.asnumpy(dev)
            want = np.fromfile(f"{folder}/{name}.{a['name']}.want", dtype=DT[a["dtype"]])
            if a["dtype"] == "float32" and c["tol"] > 0:
                nan = np.isnan(want)
                scale = max(1.0, float(np.max(np.abs(want[~nan]))) if (~nan).any() else 1.0)
                err = float(np.max(np.abs(got[~nan] - want[~nan]))) / scale if (~nan).any() else 0.0
                ok = err <= c["tol"] and bool(np.all(np.isnan(got[nan])))
                detail = f"max rel err {err:.2e} (tol {c['tol']:.0e})"
            else:
                ok = np.array_equal(got.view(np.uint8), want.view(np.uint8))
                detail = "bit-exact" if ok else f"{int(np.sum(got != want))} of {want.size} differ; first got {got[got != want][:4]} want {want[got != want][:4]}"
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {name}.{a['name']}: {detail}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
