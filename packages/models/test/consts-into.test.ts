// checkpointConsts' `into`: a tensor read straight into a caller's memory holds exactly the bytes the usual read
// returns (packed formats and F32), and a dtype that is not the stored one is refused (false), never converted.
import { checkpointConsts, openGGUF } from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";
import { describe, expect, test } from "vitest";

describe("checkpointConsts(...).into", () => {
  for (const type of ["Q8_0", "Q4_K_M", "F32"])
    test(`llama3 ${type}: every tensor it takes equals readSync's bytes`, (t) => {
      const why = needFixture("gguf/llama3");
      if (why !== undefined) return t.skip(why);
      const ck = openGGUF(fixture("gguf", "llama3", `model-${type}.gguf`));
      try {
        const source = checkpointConsts(ck);
        let taken = 0;
        for (const info of ck.tensors()) {
          const dtype =
            info.dtype === "F32"
              ? "f32"
              : info.dtype === "F16"
                ? "f16"
                : { packed: { name: info.dtype.toLowerCase() } };
          const dst = new Uint8Array(info.byteLength);
          const ok = source.into(info.name, { dtype: dtype as never, shape: info.shape }, dst);
          if (!ok) continue;
          taken++;
          expect(Buffer.from(dst).equals(Buffer.from(ck.readSync(info.name))), info.name).toBe(true);
        }
        expect(taken).toBe(ck.tensors().length);
        // Asked for another dtype than the stored one: refused, the caller converts through the usual read.
        const first = ck.tensors()[0]!;
        const other = first.dtype === "F32" ? "bf16" : "f32";
        expect(source.into(first.name, { dtype: other, shape: first.shape }, new Uint8Array(first.byteLength))).toBe(
          false,
        );
      } finally {
        ck.close();
      }
    });
});
