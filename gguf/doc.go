// Package gguf reads and writes GGUF, the file format of llama.cpp and ggml:
// a header, typed metadata (key/value pairs), tensor infos, and aligned
// tensor data.
//
// Everything downstream in irtool starts from a GGUF file, and much of it is
// checked against llama.cpp, so this package is deliberately faithful to
// ggml rather than to the GGUF prose specification: type ids, names, block
// sizes and the dequantisation arithmetic are ggml's own (ggml.h's
// enum ggml_type, ggml.c's type_traits, ggml-quants.c's dequantize_row_*),
// and dequantised values are bit-identical to ggml's to_float.
//
// Reading: Open memory-maps a file (falling back to reading it where mmap is
// unavailable) and Parse reads one held in memory, such as the model
// embedded in the irtool binary. Metadata and tensor infos are decoded
// eagerly into ordinary Go values; tensor data stays in the file and
// TensorData returns zero-copy slices of it. Parse treats its input as
// hostile: every count, length, shape and offset is checked against the
// bytes actually present before anything is allocated or sliced, and each
// problem is reported as a *FormatError naming the key or tensor at fault
// and wrapping one of the Err* classes (ErrTruncated, ErrOutOfBounds, ...).
//
// Writing: Writer produces the layout llama.cpp's own writers produce, so a
// file read and written back is byte-identical, and tests can synthesise
// tiny models that llama.cpp would load.
//
// Numbers: Dequantize expands F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
// and the K-quants Q2_K..Q6_K to float32; QuantizeQ8_0 and QuantizeQ4_0
// reproduce ggml's reference quantisers; F16ToF32 and F32ToF16 convert
// half-precision values exactly as F16C hardware does.
//
// Only GGUF v2 and v3 little-endian files are supported; v1 (2023) is
// refused with an error saying so.
package gguf
