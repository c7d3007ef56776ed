// A minimal stand-in for vitest's describe/it/expect so suites written for vitest (the executor conformance
// suite) run inside a bundled entry point on the GPU machine, where there is no vitest. Only what they use.

interface Registered {
  readonly name: string;
  readonly fn: () => void;
  readonly skip: boolean;
}

const registered: Registered[] = [];
const path: string[] = [];
let skipping = 0;

/** Groups tests under a name. */
export function describe(name: string, fn: () => void): void {
  path.push(name);
  try {
    fn();
  } finally {
    path.pop();
  }
}
describe.skip = (name: string, fn: () => void): void => {
  skipping++;
  try {
    describe(name, fn);
  } finally {
    skipping--;
  }
};

/** Registers a test. */
export function it(name: string, fn: () => void): void {
  registered.push({ name: [...path, name].join(" > "), fn, skip: skipping > 0 });
}
export const test = it;

function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a),
      kb = Object.keys(b);
    return (
      ka.length === kb.length &&
      ka.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
    );
  }
  return false;
}

/** The matchers the suites use. */
export function expect(actual: unknown, message?: string) {
  const fail = (what: string): never => {
    throw new Error(`${message ? `${message}: ` : ""}expected ${String(actual)} ${what}`);
  };
  return {
    toBe: (want: unknown) => (Object.is(actual, want) ? undefined : fail(`to be ${String(want)}`)),
    toEqual: (want: unknown) =>
      same(actual, want) ? undefined : fail(`to equal ${JSON.stringify(want)?.slice(0, 200)}`),
    toBeLessThan: (n: number) => ((actual as number) < n ? undefined : fail(`to be < ${n}`)),
    toBeGreaterThan: (n: number) => ((actual as number) > n ? undefined : fail(`to be > ${n}`)),
    toBeLessThanOrEqual: (n: number) => ((actual as number) <= n ? undefined : fail(`to be <= ${n}`)),
    toBeGreaterThanOrEqual: (n: number) => ((actual as number) >= n ? undefined : fail(`to be >= ${n}`)),
    toBeInstanceOf: (c: abstract new (...a: never[]) => unknown) =>
      actual instanceof c ? undefined : fail(`to be an instance of ${c.name}`),
  };
}

/** Runs every registered test in order; returns one line per test. */
export function runRegistered(): { name: string; status: "pass" | "fail" | "skip"; error?: string }[] {
  return registered.map((t) => {
    if (t.skip) return { name: t.name, status: "skip" as const };
    try {
      t.fn();
      return { name: t.name, status: "pass" as const };
    } catch (e) {
      return { name: t.name, status: "fail" as const, error: (e as Error).stack ?? String(e) };
    }
  });
}
