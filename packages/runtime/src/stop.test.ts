// Stop strings cut exactly: a stop split across pieces is caught, nothing after it is emitted, and text
// that only looked like a stop's start is released.
import { describe, expect, it } from "vitest";
import { StopMatcher } from "./stop.js";

function run(pieces: string[], stops: string[]): { text: string; stop: string | null; emitted: string[] } {
  const m = new StopMatcher(stops);
  const emitted: string[] = [];
  for (const p of pieces) {
    const r = m.push(p);
    emitted.push(r.text);
    if (r.stop !== null) return { text: emitted.join(""), stop: r.stop, emitted };
  }
  emitted.push(m.flush());
  return { text: emitted.join(""), stop: null, emitted };
}

describe("StopMatcher", () => {
  it("cuts before a stop string split over three pieces and holds back its prefix meanwhile", () => {
    const r = run(["ab", "cS", "TO", "Pxyz"], ["STOP"]);
    expect(r.text).toBe("abc");
    expect(r.stop).toBe("STOP");
    expect(r.emitted).toEqual(["ab", "c", "", ""]);
  });

  it("the earliest of several stops wins", () => {
    expect(run(["one two three"], ["three", "two"])).toMatchObject({ text: "one ", stop: "two" });
  });

  it("releases a false start and flushes held text at the end", () => {
    const r = run(["xST", "AR", "S"], ["STOP"]);
    expect(r.emitted).toEqual(["x", "STAR", "", "S"]);
    expect(r.stop).toBeNull();
  });

  it("without stops passes text through", () => {
    expect(run(["a", "b"], [])).toMatchObject({ text: "ab", stop: null });
  });
});
