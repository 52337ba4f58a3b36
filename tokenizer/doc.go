// Package tokenizer turns text into token ids and back exactly as llama.cpp
// does, from the tokenizer.ggml.* metadata of a GGUF file.
//
// A model's output is only meaningful if its input ids are the ones it was
// trained on, and comparisons with llama.cpp (logits, greedy generations) are
// only possible when both sides start from the same ids. This package
// therefore reproduces llama.cpp's tokenizers (src/llama-vocab.cpp,
// src/unicode.cpp) behaviour for behaviour, including their quirks:
//
//   - SentencePiece-style vocabularies (tokenizer.ggml.model = "llama"): spaces
//     are escaped to U+2581, a space is prefixed to every text fragment that
//     starts the prompt or follows a special token, adjacent symbols are
//     merged greedily by token score with a priority queue, and symbols that
//     are not tokens fall back to <0xNN> byte tokens.
//   - Byte-level BPE vocabularies (tokenizer.ggml.model = "gpt2"): the text is
//     split by the pre-tokenizer named in tokenizer.ggml.pre (hand-written
//     matchers equivalent to llama.cpp's regexes, which need look-ahead that
//     Go's regexp lacks), bytes are mapped to printable codepoints (GPT-2's
//     byte-to-unicode table) and merged by merge rank.
//   - Special tokens (control, user-defined, unknown) are cut out of the text
//     before tokenisation, as llama.cpp's tokenizer_st_partition does.
//
// Decoding is byte-exact: Piece and Decode give the bytes of each token
// (llama.cpp's token_to_piece), Detokenize reproduces llama_detokenize
// (leading-space removal, clean-up of spaces), and a StreamDecoder holds back
// incomplete UTF-8 so that streamed output never splits a character.
//
// The core works on a plain Vocab value; FromGGUF is a thin adaptor that reads
// one from a GGUF file, so the package can also be driven by hand-built
// vocabularies in tests.
package tokenizer
