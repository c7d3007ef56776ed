// `poot serve` as a user starts it: the command and its options, startServe on the bundled demo model
// (its own chat template) answering a greedy chat equal to @poot/models' reference loop, the default
// loopback binding, and typed CLI errors for bad options.
import * as net from "node:net";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { LoadedModel, loadTokenizer } from "@poot/models";
import { bufferIo, runCli } from "@poot/cli";
import { CliError, startServe, type ServeCliOptions } from "@poot/serve";
import OpenAI from "openai";
import { describe, expect, test } from "vitest";
import { createExecutor } from "../src/commands/backends.js";

const DEMO = fileURLToPath(new URL("../../../models/demo", import.meta.url));
/** The executor module `poot serve`'s engine worker imports (the CLI's, built). */
const EXECUTORS = { url: new URL("../dist/serve-executors.js", import.meta.url) };

const defaults: ServeCliOptions = {
  backend: "eval",
  host: "127.0.0.1",
  port: "0",
  maxBatch: "4",
  maxQueue: "16",
  weights: "f32",
  prepare: false,
  ctx: "64",
};

describe("poot serve", () => {
  test("--help lists the options", async () => {
    const io = bufferIo();
    expect(await runCli(["serve", "--help"], { io })).toBe(0);
    for (const flag of [
      "--backend",
      "--host",
      "--port",
      "--api-key",
      "--max-batch",
      "--ctx",
      "--chat-template",
      "--metrics-compat",
      "--prefix-cache",
    ])
      expect(io.stdout()).toContain(flag);
    expect(io.stdout()).toContain('(default: "127.0.0.1")');
  });

  test("bad options are CliErrors before anything loads", async () => {
    const io = bufferIo();
    await expect(startServe(DEMO, { ...defaults, port: "99999" }, io, createExecutor)).rejects.toMatchObject({
      code: "bad-input",
    });
    await expect(startServe(DEMO, { ...defaults, maxBatch: "0" }, io, createExecutor)).rejects.toBeInstanceOf(CliError);
    await expect(startServe(DEMO, { ...defaults, backend: "tpu" }, io, createExecutor)).rejects.toMatchObject({
      code: "bad-input",
    });
    await expect(startServe(path.join(DEMO, "nope"), defaults, io, createExecutor)).rejects.toBeInstanceOf(CliError);
    await expect(
      startServe(DEMO, { ...defaults, chatTemplate: "/nonexistent/t.jinja" }, io, createExecutor),
    ).rejects.toMatchObject({ code: "file-unreadable" });
    await expect(
      startServe(DEMO, { ...defaults, metricsCompat: "vllm,prometheus" }, io, createExecutor),
    ).rejects.toThrow('--metrics-compat takes vllm and/or llamacpp (comma-separated), got "prometheus"');
  });

  test("a port already taken fails in one line before the model loads", async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen({ host: "127.0.0.1", port: 0 }, resolve));
    const port = (taken.address() as net.AddressInfo).port;
    let executors = 0;
    const counting: typeof createExecutor = (...args) => {
      executors++;
      return createExecutor(...args);
    };
    try {
      const err = await startServe(DEMO, { ...defaults, port: String(port) }, bufferIo(), counting).catch((e) => e);
      expect(err).toBeInstanceOf(CliError);
      expect(err.message).toBe(
        `cannot listen on 127.0.0.1:${port}: listen EADDRINUSE: address already in use 127.0.0.1:${port}`,
      );
      expect(executors).toBe(0);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  test("bad options through the engine worker: the same CliErrors (unknown backend, missing model)", {
    timeout: 120_000,
  }, async () => {
    const io = bufferIo();
    await expect(
      startServe(DEMO, { ...defaults, backend: "tpu" }, io, createExecutor, undefined, EXECUTORS),
    ).rejects.toMatchObject({ code: "bad-input", message: expect.stringMatching(/^unknown backend "tpu"/) });
    const missing = path.join(DEMO, "nope");
    const err = await startServe(missing, defaults, io, createExecutor, undefined, EXECUTORS).catch((e) => e);
    expect(err).toBeInstanceOf(CliError);
    expect(err.code).toBe("file-unreadable");
    expect(err.message).not.toContain("\n");
  });

  test("the demo model on the engine worker: binds 127.0.0.1, applies its chat template, greedy chat equals the reference loop", {
    timeout: 300_000,
  }, async () => {
    const io = bufferIo();
    const started = await startServe(DEMO, defaults, io, createExecutor, undefined, EXECUTORS);
    try {
      expect(started.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(io.stderr()).toContain("poot serve: demo (context 64");
      const client = new OpenAI({ baseURL: `${started.url}/v1`, apiKey: "none", maxRetries: 0, timeout: 300_000 });
      const messages = [{ role: "user" as const, content: "Tell me a fortune about computers." }];
      const r = await client.chat.completions.create({ model: "demo", messages, max_tokens: 5, temperature: 0 });
      // The reference: the demo tokenizer's template and @poot/models' own greedy loop.
      const tok = loadTokenizer(DEMO);
      const ids = tok.encode(tok.applyChatTemplate(messages));
      const m = LoadedModel.open(DEMO);
      try {
        const g = m.generate(ids, 5, m.config.eosTokenIds).ids.filter((id) => !m.config.eosTokenIds.includes(id));
        expect(r.choices[0]!.message.content).toBe(tok.decode(g, { skipSpecial: true }));
        expect(r.usage).toEqual({
          prompt_tokens: ids.length,
          completion_tokens: g.length,
          total_tokens: ids.length + g.length,
        });
      } finally {
        m.close();
      }
    } finally {
      await started.close();
    }
  });
});
