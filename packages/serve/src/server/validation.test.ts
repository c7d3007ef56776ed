// toApiError: schema issues become 400s naming the parameter in OpenAI's dotted form, fastify's parser
// errors keep their meaning (415, 413, 400), ApiErrors pass through, and anything else is a 500.
import { describe, expect, test } from "vitest";
import { ApiError } from "../errors.js";
import { toApiError } from "./validation.js";

const issue = (instancePath: string, keyword: string, params: Record<string, unknown> = {}, message = "is bad") => ({
  instancePath,
  keyword,
  params,
  message,
});

describe("toApiError", () => {
  test("a nested path becomes messages[0].content", () => {
    const e = toApiError(
      Object.assign(new Error("x"), { validation: [issue("/messages/0/content", "type", {}, "must be string")] }),
    );
    expect(e.status).toBe(400);
    expect(e.body()).toEqual({
      error: {
        message: "messages[0].content must be string",
        type: "invalid_request_error",
        param: "messages[0].content",
        code: "invalid_request",
      },
    });
  });

  test("a missing property is named; range keywords are invalid_value; anyOf prefers a range failure", () => {
    expect(
      toApiError(Object.assign(new Error("x"), { validation: [issue("", "required", { missingProperty: "model" })] }))
        .param,
    ).toBe("model");
    expect(toApiError(Object.assign(new Error("x"), { validation: [issue("/temperature", "maximum")] })).code).toBe(
      "invalid_value",
    );
    const anyOf = [issue("/stop", "type"), issue("/stop", "maxItems"), issue("/stop", "type"), issue("/stop", "anyOf")];
    expect(toApiError(Object.assign(new Error("x"), { validation: anyOf })).code).toBe("invalid_value");
  });

  test("fastify parser codes map to 415, 413 and 400", () => {
    const f = (code: string, statusCode: number) => toApiError(Object.assign(new Error(code), { code, statusCode }));
    expect(f("FST_ERR_CTP_INVALID_MEDIA_TYPE", 415).status).toBe(415);
    expect(f("FST_ERR_CTP_BODY_TOO_LARGE", 413).status).toBe(413);
    expect(f("FST_ERR_CTP_EMPTY_JSON_BODY", 400).code).toBe("invalid_request");
    expect(f("SOMETHING_ELSE", 400).status).toBe(400);
  });

  test("ApiErrors pass through; other errors are 500 server_error", () => {
    const a = new ApiError(429, "server_busy", "busy");
    expect(toApiError(a)).toBe(a);
    expect(a.type).toBe("rate_limit_error");
    expect(new ApiError(401, "invalid_api_key", "no").type).toBe("authentication_error");
    const e = toApiError(new TypeError("boom"));
    expect(e.status).toBe(500);
    expect(e.type).toBe("server_error");
    expect(e.code).toBe("internal_error");
  });
});
