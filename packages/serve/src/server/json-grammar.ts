// Grammar-constrained JSON, part one: a JSON schema checked (ajv) and compiled to a tree of value nodes, each knowing
// the fewest characters of a value it accepts. The character automaton over these nodes is json-automaton.ts; the
// output is compact JSON: no whitespace outside strings, object members in the schema's property order, no \u escapes.
import { ApiError } from "../errors.js";
import { ajv } from "./deps.js";

/** A compiled schema node: the values it accepts. */
export type JsonNode =
  | { readonly k: "string"; readonly id: number; readonly min: number; readonly max: number | null }
  | { readonly k: "number"; readonly id: number; readonly int: boolean; readonly neg: boolean; readonly zero: boolean }
  | { readonly k: "lit"; readonly id: number; readonly values: readonly string[] }
  | { readonly k: "array"; readonly id: number; items: JsonNode; readonly min: number; readonly max: number | null }
  | { readonly k: "object"; readonly id: number; readonly props: readonly JsonProp[]; readonly req: readonly number[] }
  | { readonly k: "map"; readonly id: number; values: JsonNode }
  | { readonly k: "union"; readonly id: number; options: JsonNode[] };

/** A property of an object node: its key written as JSON followed by `:`, its value, and whether it is required. */
export interface JsonProp {
  readonly head: string;
  readonly node: JsonNode;
  readonly required: boolean;
}

/** Keywords that only annotate (ignored); anything else unknown is refused so no constraint is silently dropped. */
const ANNOTATIONS = new Set([
  "title",
  "description",
  "default",
  "examples",
  "$schema",
  "$id",
  "$comment",
  "$defs",
  "definitions",
  "deprecated",
  "readOnly",
  "writeOnly",
]);
const HANDLED = new Set([
  "type",
  "enum",
  "const",
  "anyOf",
  "allOf",
  "$ref",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "uniqueItems",
]);

/** A schema the constrained decoder can follow, compiled once and shared by every sequence that uses it. */
export class JsonGrammar {
  /** The document's node. */
  readonly root: JsonNode;
  private nextId = 0;
  private readonly mins = new Map<JsonNode, number>();
  private readonly refs = new Map<string, JsonNode>();

  /**
   * @param schema - a JSON schema, or null for any JSON object (`json_object` mode).
   * @param param - the request field holding the schema, for errors.
   * @throws ApiError 400 naming `param` and the keyword's path when the schema is invalid (ajv cannot compile it),
   * uses a keyword constrained decoding does not follow, or allows no value.
   */
  constructor(
    readonly schema: unknown,
    private readonly param: string,
  ) {
    if (schema !== null) {
      if (typeof schema !== "object" && typeof schema !== "boolean")
        throw new ApiError(400, "invalid_value", `${param} must be a JSON schema (an object)`, param);
      try {
        new (ajv())({ strict: false, allErrors: false }).compile(schema as object);
      } catch (err) {
        throw new ApiError(
          400,
          "invalid_value",
          `${param} is not a valid JSON schema: ${(err as Error).message}`,
          param,
        );
      }
    }
    this.root = schema === null ? this.map(this.any()) : this.compile(schema, "#");
    if (this.minLength(this.root) === Infinity)
      throw new ApiError(400, "invalid_value", `${param} allows no finite JSON value`, param);
  }

  private id(): number {
    return this.nextId++;
  }

  private fail(where: string, what: string): never {
    throw new ApiError(400, "invalid_value", `${this.param} at ${where}: ${what}`, this.param);
  }

  private anyNode: JsonNode | null = null;

  /** Any JSON value (a cyclic union). */
  private any(): JsonNode {
    if (this.anyNode !== null) return this.anyNode;
    const u: JsonNode = { k: "union", id: this.id(), options: [] };
    this.anyNode = u;
    u.options.push(
      { k: "string", id: this.id(), min: 0, max: null },
      { k: "number", id: this.id(), int: false, neg: true, zero: true },
      { k: "lit", id: this.id(), values: ["true", "false", "null"] },
      { k: "array", id: this.id(), items: u, min: 0, max: null },
      this.map(u),
    );
    return u;
  }

  private map(values: JsonNode): JsonNode {
    return { k: "map", id: this.id(), values };
  }

  private resolve(ref: string, where: string): unknown {
    if (ref === "#") return this.schema;
    if (!ref.startsWith("#/")) this.fail(where, `only local $ref ("#/...") is supported, got "${ref}"`);
    let cur: unknown = this.schema;
    for (const raw of ref.slice(2).split("/")) {
      const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
      if (cur === null || typeof cur !== "object" || !(key in (cur as object)))
        this.fail(where, `$ref "${ref}" points nowhere`);
      cur = (cur as Record<string, unknown>)[key];
    }
    return cur;
  }

  private compile(s: unknown, where: string): JsonNode {
    if (s === true) return this.any();
    if (s === false) this.fail(where, "the schema false allows no value");
    const o = s as Record<string, unknown>;
    for (const k of Object.keys(o))
      if (!ANNOTATIONS.has(k) && !HANDLED.has(k))
        this.fail(where, `the keyword "${k}" is not supported by constrained decoding`);
    if (typeof o.$ref === "string") {
      const ref = o.$ref;
      const known = this.refs.get(ref);
      if (known !== undefined) return known;
      // A placeholder first, so recursive schemas refer to themselves.
      const u: JsonNode = { k: "union", id: this.id(), options: [] };
      this.refs.set(ref, u);
      u.options.push(this.compile(this.resolve(ref, where), ref));
      return u;
    }
    if (Array.isArray(o.allOf)) {
      if (o.allOf.length !== 1) this.fail(where, "allOf with more than one schema is not supported");
      return this.compile(o.allOf[0], `${where}/allOf/0`);
    }
    if (Array.isArray(o.anyOf))
      return {
        k: "union",
        id: this.id(),
        options: o.anyOf.map((x, i) => this.compile(x, `${where}/anyOf/${i}`)),
      };
    if (o.const !== undefined) return { k: "lit", id: this.id(), values: [JSON.stringify(o.const)] };
    if (Array.isArray(o.enum)) {
      if (o.enum.length === 0) this.fail(where, "an empty enum allows no value");
      return { k: "lit", id: this.id(), values: [...new Set(o.enum.map((v) => JSON.stringify(v)))] };
    }
    const types = o.type === undefined ? null : Array.isArray(o.type) ? (o.type as string[]) : [o.type as string];
    if (types === null) {
      if (o.properties !== undefined || o.required !== undefined || o.additionalProperties !== undefined)
        return this.object(o, where);
      if (o.items !== undefined || o.minItems !== undefined || o.maxItems !== undefined) return this.array(o, where);
      return this.any();
    }
    const nodes = types.map((t) => this.typed(t, o, where));
    return nodes.length === 1 ? nodes[0]! : { k: "union", id: this.id(), options: nodes };
  }

  private typed(t: string, o: Record<string, unknown>, where: string): JsonNode {
    switch (t) {
      case "string": {
        const min = (o.minLength as number | undefined) ?? 0;
        const max = (o.maxLength as number | undefined) ?? null;
        if (max !== null && max < min) this.fail(where, "maxLength is below minLength");
        return { k: "string", id: this.id(), min, max };
      }
      case "integer":
      case "number":
        return this.number(t === "integer", o, where);
      case "boolean":
        return { k: "lit", id: this.id(), values: ["true", "false"] };
      case "null":
        return { k: "lit", id: this.id(), values: ["null"] };
      case "array":
        return this.array(o, where);
      case "object":
        return this.object(o, where);
      default:
        return this.fail(where, `unknown type "${t}"`);
    }
  }

  /**
   * Numbers without bounds; integers bounded to a range of at most 256 values (each written out), or from 0 or 1
   * upwards (no sign; no lone 0 from 1). Other bounds are refused: a character automaton cannot compare magnitudes.
   */
  private number(int: boolean, o: Record<string, unknown>, where: string): JsonNode {
    const lo = o.minimum as number | undefined,
      hi = o.maximum as number | undefined;
    if (lo === undefined && hi === undefined) return { k: "number", id: this.id(), int, neg: true, zero: true };
    if (int && lo !== undefined && hi !== undefined && hi - lo <= 256) {
      const values: string[] = [];
      for (let v = Math.ceil(lo); v <= hi; v++) values.push(String(v));
      if (values.length === 0) this.fail(where, "minimum is above maximum");
      return { k: "lit", id: this.id(), values };
    }
    if (int && hi === undefined && (lo === 0 || lo === 1))
      return { k: "number", id: this.id(), int, neg: false, zero: lo === 0 };
    return this.fail(
      where,
      "minimum/maximum are supported on integers only, as a range of at most 256 values or a minimum of 0 or 1",
    );
  }

  private array(o: Record<string, unknown>, where: string): JsonNode {
    if (o.uniqueItems === true) this.fail(where, "uniqueItems is not supported by constrained decoding");
    if (Array.isArray(o.items))
      this.fail(where, "items as a list (tuple) is not supported; use prefixItems-free schemas");
    const min = (o.minItems as number | undefined) ?? 0;
    const max = (o.maxItems as number | undefined) ?? null;
    if (max !== null && max < min) this.fail(where, "maxItems is below minItems");
    const node: JsonNode = { k: "array", id: this.id(), items: this.any(), min, max };
    if (o.items !== undefined) node.items = this.compile(o.items, `${where}/items`);
    return node;
  }

  /**
   * An object with `properties`: members in the properties' order, each optional one present or not, no others
   * (valid whatever additionalProperties says). Required names without a property schema take any value (an error
   * when additionalProperties is false). Without properties: a map of string keys to additionalProperties' values.
   */
  private object(o: Record<string, unknown>, where: string): JsonNode {
    const props = (o.properties ?? {}) as Record<string, unknown>;
    const required = new Set((o.required ?? []) as string[]);
    const extra = o.additionalProperties;
    if (Object.keys(props).length === 0 && required.size === 0) {
      if (extra === false) return { k: "lit", id: this.id(), values: ["{}"] };
      return this.map(
        extra === undefined || extra === true ? this.any() : this.compile(extra, `${where}/additionalProperties`),
      );
    }
    const list: JsonProp[] = Object.entries(props).map(([key, sub]) => ({
      head: `${JSON.stringify(key)}:`,
      node: this.compile(sub, `${where}/properties/${key}`),
      required: required.has(key),
    }));
    for (const key of required) {
      if (key in props) continue;
      if (extra === false)
        this.fail(where, `"${key}" is required but additionalProperties is false and it has no schema`);
      list.push({
        head: `${JSON.stringify(key)}:`,
        node: extra === undefined || extra === true ? this.any() : this.compile(extra, `${where}/additionalProperties`),
        required: true,
      });
    }
    return { k: "object", id: this.id(), props: list, req: suffixRequired(list) };
  }

  /** The fewest characters of a value of `node` (Infinity when it has none, e.g. a schema only recursion satisfies). */
  minLength(node: JsonNode): number {
    const known = this.mins.get(node);
    if (known !== undefined) return known;
    // A node being computed counts as unsatisfiable: a cycle through it adds nothing finite.
    this.mins.set(node, Infinity);
    let n: number;
    switch (node.k) {
      case "string":
        n = 2 + node.min;
        break;
      case "number":
        n = 1;
        break;
      case "lit":
        n = Math.min(...node.values.map((v) => v.length));
        break;
      case "array":
        n = 2 + (node.min > 0 ? node.min * this.minLength(node.items) + node.min - 1 : 0);
        break;
      case "map":
        n = 2;
        break;
      case "object":
        n = 2 + this.requiredCost(node, 0, false);
        break;
      case "union":
        // Options are computed until none shrinks (recursion through a union resolves over a few rounds).
        n = Infinity;
        for (let round = 0; round < 4; round++) {
          const m = Math.min(...node.options.map((x) => this.minLength(x)));
          if (m >= n) break;
          n = m;
          this.mins.set(node, n);
        }
        break;
    }
    this.mins.set(node, n);
    return n;
  }

  /** Characters of the required members of `node` from property `from` on (commas between them; `lead`: before each). */
  requiredCost(node: Extract<JsonNode, { k: "object" }>, from: number, lead: boolean): number {
    let n = 0,
      k = 0;
    for (let j = from; j < node.props.length; j++) {
      const p = node.props[j]!;
      if (!p.required) continue;
      n += p.head.length + this.minLength(p.node);
      k++;
    }
    return n + (lead ? k : Math.max(0, k - 1));
  }
}

/** For each property index i, the index of the first required property at or after i (props.length when none). */
function suffixRequired(props: readonly JsonProp[]): number[] {
  const out = new Array<number>(props.length + 1);
  out[props.length] = props.length;
  for (let i = props.length - 1; i >= 0; i--) out[i] = props[i]!.required ? i : out[i + 1]!;
  return out;
}
