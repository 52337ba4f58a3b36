#!/usr/bin/env python3
"""Writes pretok_golden.json: how the pre-tokenizer regexes that llama.cpp
uses for tokenizer.ggml.pre split a set of strings, computed with Python's
`regex` module (which supports \\p{..} classes and look-ahead) directly from
the regex strings in llama.cpp's src/llama-vocab.cpp. Each regex splits every
piece left by the previous one into matches and the gaps between matches, as
llama.cpp's unicode_regex_split does. The Go pre-tokenizers are hand-written
matchers; this file is the outside reference they are checked against.

Usage: python3 gen_pretok_golden.py > pretok_golden.json
"""
import json
import sys

import regex

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"

PRE = {
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "gpt-2": [GPT2],
    "llama-bpe": [LLAMA3],
    "qwen2": [QWEN2],
    "starcoder": [r"\p{N}", GPT2],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
}

EXTRA = [
    "1234567 12 1 123456789",
    "x\r\n\r\ny\n\n  \n  z",
    "  \n  x\t\ty \t",
    "'S 'Re 'LL 'm 'VE 'd 't's",
    "don't I'll we've she'd they're it's",
    "\u00bd\u00b2\u2463 \u0661\u0662\u0663 \u2167",
    "e\u0301t\u00e9 \u0928\u092e\u0938\u094d\u0924\u0947",
    "$+<=>^~|` a$b c+d e|f",
    "\u2026\u2014\u00ab\u00bb \u00a1hola! \u00bfqu\u00e9?",
    "a\u00a0b\u3000c\u2003d \u0085e",
    "\U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1EF\U0001F1F5 \u2764\ufe0f",
    "\u4eca\u65e5\u306f\u4e16\u754c\uff01\u3053\u3093\u306b\u3061\u306f",
    "snake_case_name = foo(bar, [1, 2]); // comment",
    "   leading and trailing   ",
    " ",
    "\n",
    "a",
    "\t\n\t",
    "x  \u00a0 y",
    "(((((  )))))",
]


def split(text, exprs):
    spans = [text]
    for expr in exprs:
        rx = regex.compile(expr)
        out = []
        for s in spans:
            last = 0
            for m in rx.finditer(s):
                if m.start() > last:
                    out.append(s[last:m.start()])
                out.append(m.group())
                last = m.end()
            if last < len(s):
                out.append(s[last:])
        spans = out
    return spans


def main():
    inp = sys.argv[1] if len(sys.argv) > 1 else None
    texts = []
    if inp:
        with open(inp, encoding="utf-8") as f:
            texts = f.read().split("\n__ggml_vocab_test__\n")[:-1]
    texts += EXTRA
    out = {"generator": "gen_pretok_golden.py (Python regex %s)" % regex.__version__,
           "cases": []}
    for t in texts:
        out["cases"].append({"text": t, "splits": {k: split(t, v) for k, v in PRE.items()}})
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
