// Stop strings over streamed text: text is released only once it cannot be the start of a stop string,
// and generation ends exactly before the first stop string (which is never emitted).

/** Result of {@link StopMatcher.push}. */
export interface StopPush {
  /** Text safe to emit now. */
  readonly text: string;
  /** The stop string that matched, or null. */
  readonly stop: string | null;
}

/** Watches streamed text for stop strings, holding back any suffix that may begin one. */
export class StopMatcher {
  private held = "";
  private done = false;
  /** @param stops - the stop strings (empty strings are ignored). */
  constructor(private readonly stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  /** Adds streamed text; returns what may be emitted and whether a stop string was reached. */
  push(text: string): StopPush {
    if (this.done) return { text: "", stop: null };
    const buf = this.held + text;
    let first = -1,
      which: string | null = null;
    for (const s of this.stops) {
      const i = buf.indexOf(s);
      if (i >= 0 && (first < 0 || i < first)) {
        first = i;
        which = s;
      }
    }
    if (which !== null) {
      this.done = true;
      this.held = "";
      return { text: buf.slice(0, first), stop: which };
    }
    // Hold back the longest suffix of buf that is a proper prefix of some stop string.
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, buf.length); k > hold; k--) {
        if (buf.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    this.held = buf.slice(buf.length - hold);
    return { text: buf.slice(0, buf.length - hold), stop: null };
  }

  /** Releases held-back text at the end of generation (no stop string followed). */
  flush(): string {
    const t = this.held;
    this.held = "";
    return this.done ? "" : t;
  }
}
