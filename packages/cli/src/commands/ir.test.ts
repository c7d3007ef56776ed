// Tests of `poot ir FILE.json`: a graph written by graph-ir's JSON writer prints as the hand-written
// expected text; unreadable files and malformed graphs are CliErrors naming the file (exit 1).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Builder, graphToJsonString } from "@poot/graph-ir";
import { afterAll, describe, expect, test } from "vitest";
import { runCli } from "../cli.js";
import { bufferIo } from "../io.js";

const dir = mkdtempSync(join(tmpdir(), "poot-ir-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `text` to a temp file and returns its path. */
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe("poot ir", () => {
  test("prints a saved graph one equation per line", async () => {
    const b = new Builder();
    const x = b.slot("Token", "x", "f32", [1, 4]);
    const w = b.const("w", "f32", [4, 4], "layers.0.w");
    b.output("out", b.add(b.matmul(x, w, "layers.0.h"), 1));
    const path = file("g.json", graphToJsonString(b.build()));
    const io = bufferIo();
    expect(await runCli(["ir", path], { io })).toBe(0);
    // Expected text written by hand from the graph above (declarations, equations, outputs).
    expect(io.stdout()).toBe(
      [
        'slot %0:f32[1,4] Token "x"  # x',
        'const %1:f32[4,4] "w"  # layers.0.w',
        "",
        "%2:f32[1,4] = matmul %0 %1  # layers.0.h",
        "%3:f32[1,4] = add %2 1:f32",
        "",
        "out out = %3",
        "",
      ].join("\n"),
    );
    expect(io.stderr()).toBe("");
  });

  test("a missing file is a file-unreadable error naming it", async () => {
    const io = bufferIo();
    const path = join(dir, "nope.json");
    expect(await runCli(["ir", path], { io })).toBe(1);
    // One line naming the path once, not Node's `ENOENT: no such file or directory, open '<path>'`.
    expect(io.stderr()).toBe(`poot: no such file or folder (file ${path})\n`);
  });

  test("bad JSON and an unsupported version are bad-input errors naming the file", async () => {
    const io = bufferIo();
    const bad = file("bad.json", "{ not json");
    expect(await runCli(["ir", bad], { io })).toBe(1);
    expect(io.stderr()).toContain(`poot: ${bad}: `);
    expect(io.stderr()).toContain("not JSON");
    const io2 = bufferIo();
    const v9 = file("v9.json", JSON.stringify({ version: 9 }));
    expect(await runCli(["ir", v9], { io: io2 })).toBe(1);
    expect(io2.stderr()).toContain("[json-version]");
  });

  test("without FILE it is a usage error", async () => {
    const io = bufferIo();
    expect(await runCli(["ir"], { io })).toBe(2);
    expect(io.stderr()).toContain("missing required argument 'file'");
  });
});
