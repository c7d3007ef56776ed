import { compile, defaultTarget } from "@poot/graph-plan";
import { it } from "vitest";
import { BASE, decoder } from "./decoder.js";

it("debug", () => {
  for (const [d, mode] of [[BASE, "decode"], [{ ...BASE, T: 10 }, "prefill"]] as const) {
    const prog = compile(decoder(d), defaultTarget("cuda"), { mode, preferImported: false });
    prog.plans().forEach((p, i) => { if (p.kernel.provenance !== "none") { const r = (p.kernel as any).request; console.log("PLAN", i, p.op, r.kind, "in", r.inputs.map((a: any) => `${a.root}:${JSON.stringify(a.shape)}/${JSON.stringify(a.strides)}+${a.offset}:${JSON.stringify(a.dtype)}`).join(" "), "out", JSON.stringify(r.output.shape), JSON.stringify(r.output.strides), "params", JSON.stringify({ ...r.params, region: r.region ? r.region.nodes.map((n: any) => n.op + JSON.stringify(n.args) + n.dtype + JSON.stringify(n.shape) + (n.op === "Reduce" || n.op==="Cast" ? JSON.stringify(n.params) : "")) : null, epilogue: undefined, schedule: undefined })); } });
  }
});
