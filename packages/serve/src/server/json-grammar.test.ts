// The JSON automaton and token mask against ajv (the oracle of what a schema allows): documents drawn uniformly
// at random from the allowed tokens of a synthetic vocabulary (single characters plus multi-character pieces)
// under tight token budgets all parse and validate; invalid schemas and unsupported keywords are 400s naming them.
import { Ajv } from "ajv";
import { describe, expect, test } from "vitest";
import { ApiError } from "../errors.js";
import { JsonGrammar } from "./json-grammar.js";
import { CompiledConstraint, ConstrainedDecoder, TokenTable } from "./token-mask.js";
import { rng } from "@poot/testkit";

const SCHEMAS: Record<string, object> = {
  person: {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 12 },
      age: { type: "integer", minimum: 0 },
      email: { type: "string" },
      role: { enum: ["admin", "user", "guest"] },
      active: { type: "boolean" },
    },
    required: ["name", "age", "role"],
    additionalProperties: false,
  },
  nested: {
    type: "object",
    properties: {
      id: { type: "integer" },
      tags: { type: "array", items: { type: "string", minLength: 1, maxLength: 5 }, minItems: 1, maxItems: 3 },
      point: {
        type: "object",
        properties: { x: { type: "number" }, y: { type: "number" } },
        required: ["x", "y"],
        additionalProperties: false,
      },
      note: { type: ["string", "null"] },
    },
    required: ["id", "tags", "point", "note"],
    additionalProperties: false,
  },
  recursive: {
    $defs: {
      node: {
        type: "object",
        properties: {
          v: { type: "integer", minimum: 1, maximum: 9 },
          kids: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 2 },
        },
        required: ["v"],
        additionalProperties: false,
      },
    },
    $ref: "#/$defs/node",
  },
  union: {
    anyOf: [
      { type: "number" },
      { type: "array", items: { const: "x" } },
      { type: "object", additionalProperties: { type: "boolean" } },
    ],
  },
};

/** A vocabulary of every printable ASCII character and some multi-character pieces, plus EOS (id 0). */
function vocab(): TokenTable {
  const texts: (string | null)[] = [null];
  for (let c = 0x20; c < 0x7f; c++) texts.push(String.fromCharCode(c));
  texts.push(
    "\n",
    "é",
    '{"',
    '":',
    '","',
    "true",
    "null",
    "admin",
    '"name',
    "12",
    "-0.5e",
    "[]",
    "{}",
    "\\n",
    '"}',
    "]}",
    ", ",
  );
  return new TokenTable(texts, [0]);
}

/** Draws one document: uniform over allowed tokens, then EOS when it may end (or always, once complete). */
function draw(c: CompiledConstraint, maxTokens: number, rand: () => number): { text: string; ended: boolean } {
  const d = new ConstrainedDecoder(c);
  let text = "";
  const V = c.table.points.length;
  for (let left = maxTokens; left > 0; left--) {
    const logits = new Float32Array(V);
    d.mask(logits, left);
    const ok = [...logits.keys()].filter((i) => logits[i] === 0);
    if (ok.length === 0) throw new Error(`no token allowed after ${JSON.stringify(text)}`);
    const id = ok[Math.floor(rand() * ok.length)]!;
    if (id === 0) return { text, ended: true };
    d.accept(id);
    text += c.table.points[id]!.join("");
  }
  return { text, ended: false };
}

describe("grammar-constrained JSON against ajv", () => {
  const table = vocab();
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    test(`${name}: 500 random documents under tight token budgets all parse and validate`, () => {
      const validate = new Ajv({ strict: false }).compile(schema);
      const c = new CompiledConstraint(new JsonGrammar(schema, "response_format"), table);
      const rand = rng(name.length * 7919);
      for (let i = 0; i < 500; i++) {
        // From the shortest document's length (the server refuses a max_tokens below it) to 40 more.
        const { text } = draw(c, c.grammar.minLength(c.grammar.root) + (i % 41), rand);
        let value: unknown;
        expect(() => (value = JSON.parse(text)), text).not.toThrow();
        expect(validate(value), `${text}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    });
  }

  test("json_object mode (no schema): any JSON object", () => {
    const c = new CompiledConstraint(new JsonGrammar(null, "response_format"), table);
    const rand = rng(5);
    for (let i = 0; i < 300; i++) {
      const { text } = draw(c, 30, rand);
      const v = JSON.parse(text) as unknown;
      expect(typeof v === "object" && v !== null && !Array.isArray(v), text).toBe(true);
    }
  });

  test("planted: without the token budget, documents run past max_tokens unfinished", () => {
    const c = new CompiledConstraint(new JsonGrammar(SCHEMAS.nested!, "response_format"), table);
    const rand = rng(11);
    let broken = 0;
    for (let i = 0; i < 100; i++) {
      // An endless budget masks by the schema alone; cutting at 40 tokens then leaves open documents.
      const d = new ConstrainedDecoder(c);
      let text = "";
      for (let t = 0; t < 40 && !d.finished; t++) {
        const logits = new Float32Array(table.points.length);
        d.mask(logits, 1e9);
        const ok = [...logits.keys()].filter((k) => logits[k] === 0 && k !== 0);
        if (ok.length === 0) break;
        const id = ok[Math.floor(rand() * ok.length)]!;
        d.accept(id);
        text += table.points[id]!.join("");
      }
      try {
        JSON.parse(text);
      } catch {
        broken++;
      }
    }
    expect(broken).toBeGreaterThan(50);
  });

  test("bad and unsupported schemas are 400s naming the field and keyword", () => {
    const bad = (schema: unknown, words: string): void => {
      let err: unknown;
      try {
        new JsonGrammar(schema, "response_format.json_schema.schema");
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApiError);
      const e = err as ApiError;
      expect(e.status).toBe(400);
      expect(e.param).toBe("response_format.json_schema.schema");
      expect(e.message).toContain(words);
      expect(e.message).not.toContain("\n");
    };
    bad({ type: "strin" }, "not a valid JSON schema");
    bad({ type: "string", pattern: "^a+$" }, '"pattern"');
    bad({ type: "string", format: "email" }, '"format"');
    bad({ type: "number", minimum: 0.5 }, "minimum/maximum");
    bad({ type: "object", properties: { a: { $ref: "http://x/y" } } }, "not a valid JSON schema");
    bad(
      {
        $defs: { n: { type: "object", properties: { a: { $ref: "#/$defs/n" } }, required: ["a"] } },
        $ref: "#/$defs/n",
      },
      "no finite JSON value",
    );
    bad({ oneOf: [{ type: "string" }] }, '"oneOf"');
    bad({ enum: [] }, "not a valid JSON schema");
    bad(5, "must be a JSON schema");
  });
});
