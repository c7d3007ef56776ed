#!/usr/bin/env python3
# Turns Debian's fortune cookie files and the King James Bible text into the demo model's corpus:
# one JSON document per line ({"source", "text"}), deterministic, English only, no offensive fortunes.
"""Usage: prepare_corpus.py --fortunes DIR --kjv kjv.txt --debs DIR --out corpus.jsonl

Called by prepare_corpus.sh, which downloads and unpacks the Debian packages. Standard library only.
"""
import argparse
import json
import os
import re
import sys

# Fortune files left out: ascii-art is pictures, not prose; the off/ subfolder (offensive fortunes,
# packaged separately as fortunes-off) is refused wherever it appears.
SKIP_FORTUNE_FILES = {"ascii-art"}

# The 66 books in the order the bible program prints them (its abbreviations are mapped by order).
KJV_BOOKS = [
    "Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth", "1 Samuel",
    "2 Samuel", "1 Kings", "2 Kings", "1 Chronicles", "2 Chronicles", "Ezra", "Nehemiah", "Esther", "Job",
    "Psalms", "Proverbs", "Ecclesiastes", "Song of Solomon", "Isaiah", "Jeremiah", "Lamentations",
    "Ezekiel", "Daniel", "Hosea", "Joel", "Amos", "Obadiah", "Jonah", "Micah", "Nahum", "Habakkuk",
    "Zephaniah", "Haggai", "Zechariah", "Malachi", "Matthew", "Mark", "Luke", "John", "Acts", "Romans",
    "1 Corinthians", "2 Corinthians", "Galatians", "Ephesians", "Philippians", "Colossians",
    "1 Thessalonians", "2 Thessalonians", "1 Timothy", "2 Timothy", "Titus", "Philemon", "Hebrews",
    "James", "1 Peter", "2 Peter", "1 John", "2 John", "3 John", "Jude", "Revelation",
]

# A character followed by a backspace is old terminal overstriking (bold/underline): keep the last char.
OVERSTRIKE = re.compile(r".\x08")
VERSE = re.compile(r"^([0-9]?[A-Za-z]+)([0-9]+):([0-9]+) (.*)$")


def clean(text):
    text = OVERSTRIKE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # Drop other control characters except tab and newline (a few cookies carry bells or escapes).
    text = "".join(c for c in text if c in "\t\n" or ord(c) >= 32 and ord(c) != 127)
    lines = [l.rstrip() for l in text.split("\n")]
    return "\n".join(lines).strip("\n")


def fortunes(folder):
    docs = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "off")
        rel_root = os.path.relpath(root, folder)
        if "off" in rel_root.split(os.sep):
            continue
        for name in sorted(files):
            path = os.path.join(root, name)
            # strfile indexes (.dat) are binary; .u8 files are symlinks to (or copies of) the plain ones.
            if name.endswith((".dat", ".u8")) or name in SKIP_FORTUNE_FILES or os.path.islink(path):
                continue
            raw = open(path, "rb").read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("latin-1")
            n = 0
            for cookie in re.split(r"\n%\n", "\n" + text + "\n"):
                c = clean(cookie)
                if len(c) >= 8:
                    docs.append({"source": "fortunes/" + name, "text": c})
                    n += 1
            print(f"fortunes/{name}: {n} cookies", file=sys.stderr)
    return docs


def kjv(path):
    chapters = {}
    order = []
    abbrevs = []
    for line in open(path, encoding="utf-8", errors="replace"):
        m = VERSE.match(line.rstrip("\n"))
        if not m:
            continue
        ab, ch, _verse, text = m.groups()
        if ab not in abbrevs:
            abbrevs.append(ab)
        key = (ab, int(ch))
        if key not in chapters:
            chapters[key] = []
            order.append(key)
        chapters[key].append(text.strip())
    if len(abbrevs) != len(KJV_BOOKS):
        sys.exit(f"expected {len(KJV_BOOKS)} books in the KJV text, found {len(abbrevs)}")
    name_of = dict(zip(abbrevs, KJV_BOOKS))
    docs = []
    for ab, ch in order:
        # One verse per line: verse numbers dropped, so the text reads as prose.
        docs.append({"source": f"kjv/{name_of[ab]} {ch}", "text": "\n".join(chapters[(ab, ch)])})
    print(f"kjv: {len(docs)} chapters", file=sys.stderr)
    return docs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fortunes", required=True)
    ap.add_argument("--kjv", required=True)
    ap.add_argument("--debs", required=True, help="folder holding the downloaded .deb files (names recorded)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    docs = []
    seen = set()
    # A few cookies appear in two files; keep the first copy so no text is weighted twice.
    for d in fortunes(a.fortunes) + kjv(a.kjv):
        if d["text"] not in seen:
            seen.add(d["text"])
            docs.append(d)
    debs = sorted(f for f in os.listdir(a.debs) if f.endswith(".deb"))
    chars = sum(len(d["text"]) for d in docs)
    with open(a.out, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    by = {}
    for d in docs:
        k = d["source"].split("/")[0]
        by[k] = by.get(k, 0) + len(d["text"])
    print(f"wrote {len(docs)} documents, {chars} characters {by} from {debs}", file=sys.stderr)


if __name__ == "__main__":
    main()
