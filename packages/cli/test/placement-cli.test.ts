// Placement through the real CLI: bad --place / --gpu-layers / budgets are one-line errors (exit 1) raised from the
// header alone, before an executor is made or a weight read, and a split placement generates transformers' greedy
// ids; bench and compile --explain report the placement.
import * as fs from "node:fs";
import * as path from "node:path";
import { bufferIo } from "@poot/cli";
import { poot } from "./run-poot.js";
import { createEvalExecutor } from "@poot/backend-reference";
import type { Executor } from "@poot/executor";
import { gpuLayers, type BlockCut, type Placement } from "@poot/runtime";
import { blockCutOf, planDevices, planPlacement, startServe } from "@poot/serve";
import { loadTokenizer } from "@poot/models";
import { createExecutor } from "../src/commands/backends.js";
import { describe, expect, test } from "vitest";
import { FIXTURES } from "./blocks-split.js";

const HAVE = fs.existsSync(path.join(FIXTURES, "hf", "llama3"));

describe.skipIf(!HAVE)("placement flags through the CLI (llama3 fixture: 2 layers)", () => {
  const dir = path.join(FIXTURES, "hf", "llama3");
  const ref = HAVE
    ? (JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      })
    : { prompt_ids: [], greedy_ids: [] };
  const cut = dir;

  const bad: [string[], RegExp][] = [
    [["--place", "0:eval,1:tpu"], /names device "tpu", which is not available/],
    [["--place", "0-1:eval,1:cpu"], /"1:cpu" overlaps an earlier entry at layer 1/],
    [["--place", "0:eval"], /leaves layer\(s\) 1 unplaced/],
    [["--place", "0-2:eval"], /the model has layers 0-1/],
    [["--gpu-layers", "x"], /--gpu-layers must be a non-negative integer, got "x"/],
    [["-ngl", "1", "--place", "0-1:cpu"], /--gpu-layers and --place both/],
    [
      ["--place", "0-1:eval", "--device-memory", "1K"],
      /--device-memory 1024 bytes is smaller than the largest block placed on eval \(layer 0, 147968 bytes of weights\)/,
    ],
    [
      ["-ngl", "1", "--host-memory", "100"],
      /--host-memory 100 bytes is smaller than the largest block placed on cpu \(layer 0, 147968 bytes of weights\)/,
    ],
    [["--place", "0-1:eval", "--device-memory", "lots"], /--device-memory must be a size like 512M or 2G, got "lots"/],
  ];
  for (const cmd of ["run", "generate", "bench", "serve"]) {
    test(`${cmd}: bad placement input is one line, exit 1`, async () => {
      const base: Record<string, string[]> = {
        run: ["run", cut, "--prompt", "hi", "--max-tokens", "2"],
        generate: ["generate", cut, "--ids", "1,2", "--greedy"],
        bench: ["bench", cut, "--prompt-tokens", "2", "--gen-tokens", "2", "--runs", "1"],
        serve: ["serve", cut, "--port", "0"],
      };
      for (const [flags, re] of bad) {
        const r = await poot(...base[cmd]!, ...flags);
        expect(r.code, `${cmd} ${flags.join(" ")}: ${r.err}`).toBe(1);
        expect(r.err).toMatch(re);
        expect(r.err.trimEnd().split("\n")).toHaveLength(1);
      }
    });
  }

  test("generate with a split placement and with -ngl gives transformers' greedy ids", async () => {
    const n = 8;
    for (const flags of [
      ["--place", "0:eval,1:eval-reference,head:eval"],
      ["--backend", "eval", "-ngl", "1"],
    ]) {
      const r = await poot(
        "generate",
        dir,
        "--ids",
        ref.prompt_ids.join(","),
        "--max-tokens",
        String(n),
        "--greedy",
        "--ignore-eos",
        ...flags,
      );
      expect(r.err).toBe("");
      expect(JSON.parse(r.out)).toEqual(ref.greedy_ids.slice(0, n));
    }
  });

  test("bench and compile --explain report the placement, bytes per device and hand-offs per token", async () => {
    const b = await poot(
      "bench",
      dir,
      "--backend",
      "eval",
      "-ngl",
      "1",
      "--prompt-tokens",
      "4",
      "--gen-tokens",
      "3",
      "--runs",
      "1",
      "--json",
    );
    expect(b.code).toBe(0);
    const rep = JSON.parse(b.out) as {
      placement: {
        unitsPerToken: number;
        handoffsPerToken: number;
        measuredHandoffsPerToken: number;
        weightBytesByDevice: Record<string, number>;
      };
    };
    expect(rep.placement.unitsPerToken).toBe(2);
    expect(rep.placement.handoffsPerToken).toBe(1);
    expect(rep.placement.measuredHandoffsPerToken).toBe(1);
    expect(Object.keys(rep.placement.weightBytesByDevice).sort()).toEqual(["cpu", "eval"]);
    const c = await poot("compile", dir, "--target", "cuda", "--explain", "--place", "0:cpu,1:cuda");
    expect(c.code).toBe(0);
    expect(c.out).toMatch(
      /placement 0:cpu,1:cuda: 2 unit\(s\) per token, 1 hand-off\(s\) per token \(256 bytes each\)/,
    );
    expect(c.out).toMatch(
      /cpu +embed, layer 0\n +cuda +layer 1, head\n +weights per device: cpu [\d.]+ MB, cuda [\d.]+ MB/,
    );
  });

  // The default placement (decision 1705), checked against the block sizes summed here: the device holds at most
  // its memory, and one more layer (the next one down, as llama.cpp's -ngl adds them) would not fit.
  function weightsOn(c: BlockCut, p: Placement, d: string): number {
    const names = new Set(c.blocks.filter((b) => p.devices[b.index] === d).flatMap((b) => b.consts));
    return [...names].reduce((n, k) => n + c.constBytes.get(k)!, 0);
  }
  function checkMostLayersFit(c: BlockCut, p: Placement, device: string, memory: number): void {
    const on = c.blocks.filter((b) => b.kind === "layer" && p.devices[b.index] === device).map((b) => b.layer!);
    const k = on.length;
    if (JSON.stringify(on) !== JSON.stringify(Array.from({ length: k }, (_, i) => c.layers - k + i)))
      throw new Error(`the layers on ${device} are not the last ${k}: ${on.join(",")}`);
    if (weightsOn(c, p, device) > memory)
      throw new Error(`${weightsOn(c, p, device)} bytes on ${device} exceed its memory ${memory}`);
    if (k < c.layers && weightsOn(c, gpuLayers(k + 1, c.layers, device), device) <= memory)
      throw new Error(`${k + 1} layers would fit on ${device} in ${memory} bytes; the placement has ${k}`);
  }

  test("default placement: as many layers as fit in a planted tiny device memory, the rest on the cpu", () => {
    const c = blockCutOf(dir, "f32", "run");
    const total = weightsOn(c, { layers: 2, devices: ["gpu", "gpu", "gpu", "gpu"] }, "gpu");
    expect(total).toBe(131072 + 2 * 147968 + 256);
    const plan = (memory: number | null) =>
      planPlacement({}, "gpu", dir, "f32", "run", ["gpu", "cpu"], undefined, () => memory);
    // Fits (90% of the free memory holds every weight) or a device with no fixed memory: one program, as before.
    expect(plan(Math.ceil(total / 0.9))).toBeNull();
    expect(plan(null)).toBeNull();
    for (const [memory, layers] of [
      [Math.floor(total / 0.9) - 1000, 1],
      // 90% of 310400 holds layer 1 and the head (279296 bytes); 90% of 310300 does not.
      [310400, 1],
      [310300, 0],
      [1000, 0],
    ] as const) {
      const p = plan(memory)!;
      expect(p.chosen).toMatch(new RegExp(`default: ${layers} of 2 layers on gpu .* the rest on cpu`));
      checkMostLayersFit(c, p.placement, "gpu", Math.floor(memory * 0.9));
      expect(p.budgets).toEqual({});
    }
    // The planted violations the check catches: one layer too many, one too few.
    expect(() => checkMostLayersFit(c, gpuLayers(2, 2, "gpu"), "gpu", 300000)).toThrow(/exceed its memory/);
    expect(() => checkMostLayersFit(c, gpuLayers(0, 2, "gpu"), "gpu", 300000)).toThrow(/1 layers would fit/);
  });

  test("default placement asks the backend's executor for its memory and keeps that executor as the device", () => {
    let made = 0;
    // A device whose caps say it has 320 KB (planted): the real eval executor otherwise.
    const small = (): Executor => {
      const ex = createEvalExecutor();
      made++;
      return new Proxy(ex, {
        get: (t, k, r) =>
          k === "caps"
            ? { ...t.caps, deviceMemoryBytes: 320000 }
            : ((v) => (typeof v === "function" ? v.bind(t) : v))(Reflect.get(t, k, r)),
      });
    };
    const { plan, placed } = planDevices({}, "eval", dir, "f32", "run", ["eval", "cpu"], (n) =>
      n === "eval" ? small() : createEvalExecutor(),
    );
    try {
      expect(made).toBe(1);
      expect(plan!.chosen).toMatch(
        /default: 1 of 2 layers on eval \(0\.3 MB of weights fit in 90% of its 0\.3 MB free/,
      );
      checkMostLayersFit(blockCutOf(dir, "f32", "run"), plan!.placement, "eval", 288000);
      expect(placed.devices.map((d) => d.name)).toEqual(["eval", "cpu"]);
    } finally {
      placed.dispose();
    }
  });

  test("--device-memory without a placement: the default split gives transformers' greedy ids; bench and compile --explain show it", async () => {
    const n = 6;
    const g = await poot(
      "generate",
      dir,
      "--ids",
      ref.prompt_ids.join(","),
      "--max-tokens",
      String(n),
      "--greedy",
      "--ignore-eos",
      "--backend",
      "eval",
      "--device-memory",
      "300000",
    );
    expect(g.err).toBe("");
    expect(JSON.parse(g.out)).toEqual(ref.greedy_ids.slice(0, n));
    const b = await poot(
      "bench",
      dir,
      "--backend",
      "eval",
      "--device-memory",
      "300000",
      "--prompt-tokens",
      "4",
      "--gen-tokens",
      "3",
      "--runs",
      "1",
    );
    expect(b.code).toBe(0);
    expect(b.out).toMatch(/placement 0:cpu,1:eval: 2 unit\(s\) per token, 1 hand-off\(s\) per token/);
    expect(b.out).toMatch(/weights per device: cpu 0\.3 MB, eval 0\.3 MB/);
    expect(b.out).toMatch(/default: 1 of 2 layers on eval \(0\.3 MB of weights fit in --device-memory 0\.3 MB/);
    expect(b.out).toMatch(/hand-offs counted: 1 per decode token/);
    expect(b.out).not.toMatch(/paged/);
    const c = await poot("compile", dir, "--target", "cuda", "--explain", "--device-memory", "300000");
    expect(c.code).toBe(0);
    expect(c.out).toMatch(/placement 0:cpu,1:cuda: 2 unit\(s\) per token/);
    expect(c.out).toMatch(/default: 1 of 2 layers on cuda/);
    const all = await poot("compile", dir, "--target", "cuda", "--explain");
    expect(all.out).toMatch(/placement: every block on cuda as one program/);
  });

  test("poot serve --place: /admin/place moves blocks through the serve command; the answer stays transformers'", {
    timeout: 300_000,
  }, async () => {
    const io = bufferIo();
    const KEY = "sk-place-0123456789";
    const started = await startServe(
      dir,
      {
        backend: "eval",
        host: "127.0.0.1",
        port: "0",
        maxBatch: "2",
        maxQueue: "8",
        weights: "f32",
        prepare: false,
        ctx: "64",
        apiKey: KEY,
        place: "0:eval,1:eval-reference",
      },
      io,
      createExecutor,
      ["eval", "eval-reference", "cpu"],
    );
    const admin = async (method: string, body?: unknown, key = KEY) => {
      const r = await fetch(`${started.url}/admin/place`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: r.status, json: (await r.json()) as Record<string, unknown> };
    };
    try {
      expect((await admin("GET")).json).toMatchObject({ place: "0:eval,1:eval-reference", units_per_token: 2 });
      expect((await admin("POST", { place: "0-1:eval-reference" }, "sk-wrong")).status).toBe(401);
      const bad = await admin("POST", { place: "0:eval,1:tpu" });
      expect(bad.status).toBe(400);
      expect((bad.json["error"] as { message: string }).message).toMatch(/names device "tpu", which is not available/);
      const moved = await admin("POST", { place: "0-1:eval-reference" });
      expect(moved.status).toBe(200);
      expect(moved.json).toMatchObject({ place: "0-1:eval-reference", units_per_token: 1, relocations: 1 });
      const r = await fetch(`${started.url}/v1/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "llama3",
          prompt: ref.prompt_ids,
          max_tokens: 16,
          temperature: 0,
          ignore_eos: true,
        }),
      });
      const text = ((await r.json()) as { choices: { text: string }[] }).choices[0]!.text;
      expect(text).toBe(loadTokenizer(dir).decode(ref.greedy_ids, { skipSpecial: true }));
    } finally {
      await started.close();
    }
  });

  test("--device-memory below the weights pages blocks: same greedy ids; bench reports page-ins", async () => {
    const n = 6;
    const g = await poot(
      "generate",
      dir,
      "--ids",
      ref.prompt_ids.join(","),
      "--max-tokens",
      String(n),
      "--greedy",
      "--ignore-eos",
      "--backend",
      "eval",
      "--gpu-layers",
      "2",
      "--device-memory",
      "200000",
    );
    expect(g.err).toBe("");
    expect(JSON.parse(g.out)).toEqual(ref.greedy_ids.slice(0, n));
    const b = await poot(
      "bench",
      dir,
      "--backend",
      "eval",
      "--gpu-layers",
      "2",
      "--device-memory",
      "200000",
      "--prompt-tokens",
      "4",
      "--gen-tokens",
      "3",
      "--runs",
      "1",
    );
    expect(b.code).toBe(0);
    expect(b.out).toMatch(/paged \(weights above the budget, LRU\): eval budget 0\.2 MB/);
    expect(b.out).toMatch(/paging: \d+ page-ins \([\d.]+ MB read\), \d+ page-outs, \d+ ms stalled on page-ins/);
  });
});
