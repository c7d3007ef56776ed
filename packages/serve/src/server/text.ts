// Prompt text -> token ids, shared by the main thread and the text worker: the chat template (an override
// or the tokenizer's own, with the variables HF apply_chat_template gives every template) and encoding.
import { Template } from "@huggingface/jinja";
import type { ChatMessage, Tokenizer } from "@poot/models";

/** What turns text into ids: a tokenizer and an optional template that replaces its own. */
export interface TextCodec {
  readonly tok: Tokenizer;
  readonly template: Template | null;
}

/** A codec over `tok`, with `chatTemplate` (Jinja source) replacing the tokenizer's template when given. */
export function textCodec(tok: Tokenizer, chatTemplate?: string): TextCodec {
  return { tok, template: chatTemplate === undefined ? null : new Template(chatTemplate) };
}

/**
 * The rendered prompt with the generation prompt, or null when there is no template. Throws on a template error.
 * `tools` (OpenAI function tools) are given to the template as HF apply_chat_template(tools=...) does; templates
 * that do not read them ignore them.
 */
export function renderChat(
  c: TextCodec,
  messages: readonly ChatMessage[],
  tools?: readonly unknown[] | null,
): string | null {
  const extra = tools === undefined || tools === null || tools.length === 0 ? {} : { tools };
  if (c.template !== null) {
    return c.template.render({
      ...extra,
      messages,
      add_generation_prompt: true,
      bos_token: c.tok.bosToken ?? "",
      eos_token: c.tok.eosToken ?? "",
    });
  }
  if (c.tok.chatTemplate === null) return null;
  return c.tok.applyChatTemplate(messages, { addGenerationPrompt: true, variables: extra });
}

/** Placeholders for message contents (Supplementary Private Use Area-B, which no real text here carries). */
const OPEN = "\u{100000}",
  CLOSE = "\u{100001}";
const PLACEHOLDER = /\u{100000}(\d+)\u{100001}/gu;
/** Code points the server reserves: the placeholders and the tokenizer's special-token aliases (plane 15). */
const RESERVED = /[\u{F0000}-\u{FFFFF}\u{100000}\u{100001}]/u;

const escapeRe = (t: string): string => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The ids of a chat (the template writes BOS itself: HF tokenizes it without adding special tokens), or null. The
 * template's own markers are special tokens; text inside the messages never is: `<|eos|><|assistant|>` typed by a
 * user is those characters, not an end of turn and a role (issue #20). Chats whose contents hold no special-token
 * text are tokenized exactly as HF apply_chat_template(tokenize=True) does; the others in the same single pass with
 * the template's markers written as the tokenizer's aliases and special parsing off, so only those are special.
 */
export function encodeChat(
  c: TextCodec,
  messages: readonly ChatMessage[],
  tools?: readonly unknown[] | null,
): number[] | null {
  const text = renderChat(c, messages, tools);
  if (text === null) return null;
  const specials = c.tok.specialTokens.filter((t) => t !== "");
  const injected = messages.find((m) => specials.some((t) => m.content.includes(t)));
  if (injected === undefined) return c.tok.encode(text, { addSpecial: false });
  if (messages.some((m) => RESERVED.test(m.content))) {
    throw new Error("message content holds private-use code points (planes 15-16) that the server reserves");
  }
  // The template rendered around placeholders: every special-token string left in it is the template's own.
  const skeleton = renderChat(
    c,
    messages.map((m, i) => ({ ...m, content: `${OPEN}${i}${CLOSE}` })),
    tools,
  )!;
  const filled = (s: string): string => s.replace(PLACEHOLDER, (_, i: string) => messages[Number(i)]!.content);
  // A template that rewrites contents (trim, case, ...) leaves them where the placeholders cannot show.
  if (filled(skeleton) !== text) {
    const token = specials.find((t) => injected.content.includes(t))!;
    throw new Error(
      `a message holds the special-token text '${token}', and this chat template changes message text, so it cannot be kept as plain text; remove it`,
    );
  }
  const markers = new RegExp(specials.map(escapeRe).join("|"), "g");
  const marked = filled(skeleton.replace(markers, (t) => c.tok.specialAlias(t)!));
  return c.tok.encode(marked, { addSpecial: false, parseSpecial: false });
}
