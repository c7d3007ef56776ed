# The demo model's special tokens, chat template and the user prompts that turn corpus documents
# into single-turn chat examples (the corpus has no dialogues, so the request is made from the source).
"""Imported by train.py; standard library only."""

# Ids follow this order: <|bos|> = 0, <|eos|> = 1, <|user|> = 2, <|assistant|> = 3.
SPECIALS = ("<|bos|>", "<|eos|>", "<|user|>", "<|assistant|>")

# One turn: <|user|>request<|assistant|>reply<|eos|>. A system message is rendered as a user turn
# (the model never saw a system role); <|eos|> closes each assistant reply, so generation stops there.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|assistant|>' + message['content'] + '<|eos|>' }}"
    "{% else %}"
    "{{ '<|user|>' + message['content'] }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)

# Fortune file name -> topic words for the request; files not listed get a topic-free request.
FORTUNE_TOPICS = {
    "art": "art", "computers": "computers", "debian": "Debian", "drugs": "drugs", "education": "education",
    "food": "food", "goedel": "logic", "humorists": "humor", "kids": "children", "law": "the law",
    "linux": "Linux", "linuxcookie": "Linux", "literature": "literature", "love": "love", "magic": "magic",
    "medicine": "medicine", "men-women": "men and women", "news": "the news", "people": "people",
    "perl": "Perl", "pets": "pets", "politics": "politics", "pratchett": "Terry Pratchett",
    "riddles": "riddles", "science": "science", "songs-poems": "songs and poems", "sports": "sports",
    "startrek": "Star Trek", "tao": "the Tao", "wisdom": "wisdom", "work": "work", "zippy": "Zippy the Pinhead",
}

FORTUNE_ANY = ["Tell me a fortune.", "Give me a fortune cookie.", "Say something clever.",
               "Tell me something funny.", "Share a quote."]
FORTUNE_TOPIC = ["Tell me a fortune about {t}.", "Say something about {t}.", "Give me a quote about {t}.",
                 "What do you know about {t}?"]
KJV = ["Read {b} chapter {c}.", "Recite {b} {c}.", "What does {b} chapter {c} say?",
       "Quote the King James Bible, {b} {c}."]


def chat_prompt(source, rng):
    """The user request for a document from `source` ("fortunes/<file>" or "kjv/<Book> <chapter>")."""
    kind, _, rest = source.partition("/")
    if kind == "kjv":
        book, _, chapter = rest.rpartition(" ")
        return rng.choice(KJV).format(b=book, c=chapter)
    topic = FORTUNE_TOPICS.get(rest)
    if topic is None or rng.random() < 0.3:
        return rng.choice(FORTUNE_ANY)
    return rng.choice(FORTUNE_TOPIC).format(t=topic)
