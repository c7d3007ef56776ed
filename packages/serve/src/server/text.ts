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

/** The rendered prompt with the generation prompt, or null when there is no template. Throws on a template error. */
export function renderChat(c: TextCodec, messages: readonly ChatMessage[]): string | null {
  if (c.template !== null) {
    return c.template.render({ messages, add_generation_prompt: true, bos_token: c.tok.bosToken ?? "", eos_token: c.tok.eosToken ?? "" });
  }
  if (c.tok.chatTemplate === null) return null;
  return c.tok.applyChatTemplate(messages, { addGenerationPrompt: true });
}

/** The ids of a chat (the template writes BOS itself: HF tokenizes it without adding special tokens), or null. */
export function encodeChat(c: TextCodec, messages: readonly ChatMessage[]): number[] | null {
  const text = renderChat(c, messages);
  return text === null ? null : c.tok.encode(text, { addSpecial: false });
}
