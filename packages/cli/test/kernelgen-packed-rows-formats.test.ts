// kernelgen's other packed-weight kernels over every GGML block format (models' descriptors), in the interpreter on
// GPU-shaped and CPU caps: packed row gathers and whole-tensor decodes (synthesized from a graph-plan request), the
// imported byte gather, packed row movement, contractions computed inline (mixed formats sharing x) and gate-routed
// experts. Oracles: graph-ir eval over tables decoded by models' ggml-port decoders, or graph-ir's packed Gather.
import { Builder, evaluate, stridesOf } from "@poot/graph-ir";
import type { DType } from "@poot/graph-ir";
import { defaultTarget } from "@poot/graph-plan";
import type { Access, KernelRequest, Region } from "@poot/graph-plan";
import {
  cpuSynthCaps,
  importedKernel,
  importedLaunch,
  synthCapsFrom,
  synthesizeMovement,
  synthesizeRequest,
} from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import type { GGMLTypeName } from "@poot/models";
import { describe, expect, it } from "vitest";
import {
  FIXTURES,
  TYPES,
  decodeIndependently,
  descriptor,
  expectClose,
  expectExact,
  fixtureRows,
  poisoned,
  randF32,
  randomBlocks,
  rng,
  run,
  toWords,
} from "./packed-formats.js";

const CAPS: Record<string, SynthCaps> = {
  tree: { maxWorkgroup: 64, sharedBytes: 4096 },
  cuda: synthCapsFrom(defaultTarget("cuda").caps as never),
  cpu: cpuSynthCaps(),
};

let nextValue = 0;
const access = (dtype: DType, shape: readonly number[]): Access => {
  const v = nextValue++;
  return { value: v, root: v, dtype, shape, strides: stridesOf(shape), offset: 0 };
};
const packed = (t: GGMLTypeName): DType => ({ packed: descriptor(t) });

/** Synthesizes `req`, binds `inputs` by the kernel's bindings, runs it over a poisoned output of `n` elements. */
function launch(
  req: KernelRequest,
  caps: SynthCaps,
  inputs: readonly ArrayLike<number>[],
  n: number,
): ArrayLike<number> {
  const k = synthesizeRequest(req, caps, "k");
  const out = poisoned(k.kernel, "out", n);
  const buffers: Record<string, ArrayLike<number>> = { out };
  for (const b of k.bindings) {
    if (b.source.kind !== "input") continue;
    const a = inputs[b.source.index]!;
    // The CPU SIMD kernels read packed weights as bytes (u8 buffers): the same little-endian words, viewed as bytes.
    const bytes = k.kernel.buffers.find((p) => p.name === b.buffer)?.elem === "u8" && a instanceof Uint32Array;
    buffers[b.buffer] = bytes ? new Uint8Array(a.buffer, a.byteOffset, a.byteLength) : a;
  }
  run(k.kernel, {
    grid: [...k.grid],
    buffers: buffers as never,
    ...(k.subgroupSize === undefined ? {} : { subgroupSize: k.subgroupSize }),
  });
  return out as ArrayLike<number>;
}

/** Row length (elements) of `blocks` blocks of `t`. */
const rowOf = (t: GGMLTypeName, blocks: number): number => blocks * descriptor(t).blockSize;

describe("packed row gather and whole-table decode (synthesized) against models' ggml decoders", () => {
  // [rows in the table, blocks per row, ids]: a one-row table; repeated and first/last ids; 2-D ids of one column.
  const shapes: readonly (readonly [number, number, readonly number[], readonly number[]])[] = [
    [1, 1, [0], [1]],
    [5, 2, [4, 0, 4], [3]],
    [3, 3, [2, 1], [2, 1]],
  ];
  for (const t of TYPES) {
    for (const caps of Object.keys(CAPS)) {
      for (const [V, nb, ids, idShape] of shapes) {
        it(`${t} on ${caps} caps: PackedRowGather of ${ids.length} row(s) from [${V}, ${rowOf(t, nb)}] (ids [${ids.join(", ")}]) and DecodePacked of the table`, () => {
          const D = rowOf(t, nb);
          const bytes = randomBlocks(rng(V * 97 + nb * 13 + ids.length + caps.length), t, V * nb);
          const words = toWords(bytes);
          const idArr = Int32Array.from(ids);
          const gathered = launch(
            {
              kind: "movement",
              op: "PackedRowGather",
              region: null,
              emulated16: false,
              params: {} as never,
              inputs: [access(packed(t), [V, D]), access("i32", idShape)],
              output: access("f32", [...idShape, D]),
            },
            CAPS[caps]!,
            [words, idArr],
            ids.length * D,
          );
          const decoded = launch(
            {
              kind: "movement",
              op: "DecodePacked",
              region: null,
              emulated16: false,
              params: {} as never,
              inputs: [access(packed(t), [V, D])],
              output: access("f32", [V, D]),
            },
            CAPS[caps]!,
            [words],
            V * D,
          );
          const g = new Builder();
          const table = g.const("table", "f32", [V, D]);
          g.output("rows", g.gather(table, g.const("ids", "i32", idShape), 0));
          g.output("all", table);
          const o = evaluate(g.build(), { consts: { table: decodeIndependently(t, bytes), ids: idArr } }).outputs;
          // The recipe's f32 arithmetic is ggml's: the decode is exact, not merely close.
          expectExact(gathered, o.rows!.data);
          expectExact(decoded, o.all!.data);
        });
      }
    }
  }

  // Rows written by ggml's own quantizers (the GGUF fixtures), gathered out of order and decoded.
  describe.skipIf(FIXTURES === undefined)(
    "ggml-encoded rows from fixtures/gguf (skipped when missing, outside CI)",
    () => {
      for (const t of ["Q4_K", "Q6_K", "Q5_0", "Q5_1", "Q8_0"] as const) {
        for (const caps of ["cuda", "cpu"]) {
          it(`${t} on ${caps} caps: PackedRowGather of fixture rows [3, 0, 3]`, () => {
            const rows = fixtureRows(t, 4);
            expect(rows, `a 2-D ${t} tensor in the fixtures`).toBeDefined();
            const { K: D, bytes } = rows!;
            const ids = Int32Array.from([3, 0, 3]);
            const got = launch(
              {
                kind: "movement",
                op: "PackedRowGather",
                region: null,
                emulated16: false,
                params: {} as never,
                inputs: [access(packed(t), [4, D]), access("i32", [3])],
                output: access("f32", [3, D]),
              },
              CAPS[caps]!,
              [toWords(bytes), ids],
              3 * D,
            );
            const table = decodeIndependently(t, bytes);
            expectExact(
              got,
              [...ids].flatMap((id) => Array.from(table.subarray(id * D, (id + 1) * D))),
            );
          });
        }
      }
    },
  );

  // Rows written by llama.cpp's llama_model_quantize (fixtures/gguf/formats, in the repo): the formats of issue #26.
  describe("llama.cpp-quantized rows from fixtures/gguf/formats", () => {
    for (const t of ["Q4_0", "Q4_1", "Q5_K", "Q3_K", "Q2_K", "IQ4_NL", "IQ4_XS", "MXFP4"] as const) {
      for (const caps of ["cuda", "cpu"]) {
        it(`${t} on ${caps} caps: PackedRowGather of fixture rows [3, 0, 3]`, () => {
          const rows = fixtureRows(t, 4);
          expect(rows, `a ${t} tensor in fixtures/gguf/formats`).toBeDefined();
          const { K: D, bytes } = rows!;
          const ids = Int32Array.from([3, 0, 3]);
          const got = launch(
            {
              kind: "movement",
              op: "PackedRowGather",
              region: null,
              emulated16: false,
              params: {} as never,
              inputs: [access(packed(t), [4, D]), access("i32", [3])],
              output: access("f32", [3, D]),
            },
            CAPS[caps]!,
            [toWords(bytes), ids],
            3 * D,
          );
          const table = decodeIndependently(t, bytes);
          expectExact(
            got,
            [...ids].flatMap((id) => Array.from(table.subarray(id * D, (id + 1) * D))),
          );
        });
      }
    }
  });

  it("a table whose rows are not whole blocks is a typed bad_shape error, for every format", () => {
    for (const t of TYPES) {
      const D = descriptor(t).blockSize + 16;
      const req = (op: string, inputs: Access[], out: Access): KernelRequest => ({
        kind: "movement",
        op,
        region: null,
        emulated16: false,
        params: {} as never,
        inputs,
        output: out,
      });
      expect(() =>
        synthesizeRequest(
          req("PackedRowGather", [access(packed(t), [2, D]), access("i32", [1])], access("f32", [1, D])),
          CAPS.cuda!,
        ),
      ).toThrow(expect.objectContaining({ code: "bad_shape" }));
      expect(() =>
        synthesizeRequest(req("DecodePacked", [access(packed(t), [2, D])], access("f32", [2, D])), CAPS.cpu!),
      ).toThrow(expect.objectContaining({ code: "bad_shape" }));
    }
  });
});

describe("packed rows moved as bytes (every format's row size, rows not word aligned)", () => {
  for (const t of TYPES) {
    it(`${t}: imported gather_rows_packed and synthesized gather / dynamic update of rows equal graph-ir's packed Gather`, () => {
      const f = descriptor(t);
      const V = 4,
        nb = 2,
        D = rowOf(t, nb);
      const rowBytes = nb * f.bytesPerBlock;
      const bytes = randomBlocks(rng(f.bytesPerBlock), t, V * nb);
      const ids = Int32Array.from([3, 0, 3, 1]);
      const g = new Builder();
      const tb = g.const("t", { packed: f }, [V, D]);
      g.output("rows", g.gather(tb, g.const("ids", "i32", [ids.length]), 0));
      const want = evaluate(g.build(), { consts: { t: bytes, ids } }).outputs.rows!.data;
      const R = ids.length;
      const l = importedLaunch("gather_rows_packed", [R, V, rowBytes]);
      const outWords = Math.ceil((R * rowBytes) / 4);
      const imported = poisoned(importedKernel("gather_rows_packed"), "out", outWords);
      run(l.kernel, {
        grid: [...l.grid],
        buffers: { table: toWords(bytes), ids, out: imported },
        uniforms: l.uniforms,
      });
      expectExact(new Uint8Array((imported as Uint32Array).buffer, 0, R * rowBytes), want);
      for (const caps of Object.values(CAPS)) {
        const s = synthesizeMovement(
          { name: "pg", dtype: { packed: f }, shape: [V, D], op: { op: "gather", axis: 0, indicesShape: [R] } },
          caps,
        );
        const out = poisoned(s.kernel, "out", outWords);
        run(s.kernel, { grid: [...s.grid], buffers: { x: toWords(bytes), indices: ids, out } });
        expectExact(new Uint8Array((out as Uint32Array).buffer, 0, R * rowBytes), want);
        // Row 2 replaced by row 0: a dynamic update of whole rows is a byte copy of rows by definition.
        const u = synthesizeMovement(
          { name: "pu", dtype: { packed: f }, shape: [V, D], op: { op: "dynamicUpdateSlice", updateShape: [1, D] } },
          caps,
        );
        const upd = poisoned(u.kernel, "out", Math.ceil((V * rowBytes) / 4));
        run(u.kernel, {
          grid: [...u.grid],
          buffers: {
            x: toWords(bytes),
            update: toWords(bytes.slice(0, rowBytes)),
            starts: Int32Array.from([2, 0]),
            out: upd,
          },
        });
        expectExact(new Uint8Array((upd as Uint32Array).buffer, 0, V * rowBytes), [
          ...bytes.slice(0, 2 * rowBytes),
          ...bytes.slice(0, rowBytes),
          ...bytes.slice(3 * rowBytes),
        ]);
      }
    });
  }

  it("a packed movement whose rows are not whole blocks is a typed bad_shape error", () => {
    for (const t of TYPES) {
      const D = descriptor(t).blockSize + 16;
      expect(() =>
        synthesizeMovement(
          { name: "pg", dtype: packed(t) as never, shape: [2, D], op: { op: "gather", axis: 0, indicesShape: [1] } },
          CAPS.cuda!,
        ),
      ).toThrow(expect.objectContaining({ code: "bad_shape" }));
    }
  });
});

/** y = acc0 · acc1 over [M, N] (two weights sharing x, combined elementwise). */
const product = (shape: number[]): Region => ({
  nodes: [{ op: "Mul", args: [{ in: 0 }, { in: 1 }], params: {}, dtype: "f32", shape }],
  result: 0,
});

describe("contractions with packed weights of two formats sharing x (computed inline)", () => {
  const pairs: readonly (readonly [GGMLTypeName, GGMLTypeName])[] = [
    ["Q4_K", "Q6_K"],
    ["Q2_K", "Q3_K"],
    ["Q5_K", "Q8_0"],
    ["Q4_0", "Q5_1"],
    ["Q4_1", "Q5_0"],
  ];
  for (const [t0, t1] of pairs) {
    for (const caps of ["tree", "cpu"]) {
      it(`${t0} · ${t1} on ${caps} caps: M=2, N=3, K=${rowOf("Q4_K", 1)} (the larger block)`, () => {
        const [M, N, K] = [2, 3, 256];
        const r = rng(t0.length * 31 + t1.charCodeAt(1) + caps.length);
        const x = randF32(r, M * K);
        const w = [t0, t1].map((t) => randomBlocks(r, t, (N * K) / descriptor(t).blockSize));
        const req: KernelRequest = {
          kind: "dequant-gemv",
          op: "PackedContraction",
          region: null,
          emulated16: false,
          inputs: [access("f32", [M, K]), access(packed(t0), [N, K]), access(packed(t1), [N, K])],
          output: access("f32", [M, N]),
          params: { accDtype: "f32", heads: 2, transposeB: true, epilogue: product([M, N]) } as never,
        };
        const got = launch(req, CAPS[caps]!, [x, toWords(w[0]!), toWords(w[1]!)], M * N);
        const g = new Builder();
        const xr = g.const("x", "f32", [M, K]);
        const accs = [0, 1].map((h) => {
          const wt = g.transpose(g.const(`w${h}`, "f32", [N, K]), [1, 0]);
          return [g.matmul(xr, wt), g.matmul(g.unary("Abs", xr), g.unary("Abs", wt))] as const;
        });
        g.output("y", g.mul(accs[0]![0], accs[1]![0]));
        accs.forEach(([y, s], h) => {
          g.output(`y${h}`, y);
          g.output(`s${h}`, s);
        });
        const o = evaluate(g.build(), {
          consts: { x, w0: decodeIndependently(t0, w[0]!), w1: decodeIndependently(t1, w[1]!) },
        }).outputs;
        expectClose(
          got,
          o.y!.data,
          Array.from(o.s0!.data, (s0, i) => s0 * Math.abs(o.y1!.data[i]!) + Math.abs(o.y0!.data[i]!) * o.s1!.data[i]!),
          1e-5,
        );
      });
    }
  }
});

describe("gate-routed experts with packed weights of every format", () => {
  for (const t of TYPES) {
    it(`${t}: T=3 tokens, E=3 experts, top-2, N=5, one block per row: each slot equals its expert's product`, () => {
      const [T, E, S, N] = [3, 3, 2, 5];
      const K = rowOf(t, 1);
      const r = rng(K + t.charCodeAt(1) * 7);
      const x = randF32(r, T * K);
      const w = randomBlocks(r, t, (E * N * K) / descriptor(t).blockSize);
      // Token t routes to experts {t, t+1 mod E} with positive gates; the third gate is zero.
      const chosen = Array.from({ length: T }, (_, i) => [i % E, (i + 1) % E].sort((a, b) => a - b));
      const gates = new Float32Array(T * E);
      chosen.forEach((es, i) => es.forEach((e) => (gates[i * E + e] = 0.25 + r())));
      const req: KernelRequest = {
        kind: "indexed-matmul",
        op: "IndexedMatMul",
        region: null,
        emulated16: false,
        inputs: [access("f32", [T, K]), access(packed(t), [E, N, K]), access("f32", [T, E])],
        output: access("f32", [T, S, N]),
        params: {
          accDtype: "f32",
          epilogue: null,
          routing: { by: "gates", slots: S, combine: "slots", post: null },
        } as never,
      };
      const got = launch(req, CAPS.tree!, [x, toWords(w), gates], T * S * N);
      const g = new Builder();
      const xe = g.broadcast(g.reshape(g.const("x", "f32", [T, K]), [1, T, K]), [E, T, K]);
      const we = g.transpose(g.const("w", "f32", [E, N, K]), [0, 2, 1]);
      g.output("y", g.matmul(xe, we));
      g.output("s", g.matmul(g.unary("Abs", xe), g.unary("Abs", we)));
      const o = evaluate(g.build(), { consts: { x, w: decodeIndependently(t, w) } }).outputs;
      const pick = (a: ArrayLike<number>): number[] =>
        chosen.flatMap((es, i) => es.flatMap((e) => Array.from({ length: N }, (_, n) => a[(e * T + i) * N + n]!)));
      expectClose(got, pick(o.y!.data), pick(o.s!.data), 1e-5);
    });
  }
});
