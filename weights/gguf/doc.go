// Package gguf reads GGUF files, the single-file format in which llama.cpp
// and ggml keep a model's metadata and weights (versions 2 and 3,
// little-endian).
//
// Open maps the file read-only and parses its header, its metadata (every
// GGUF value type, arrays of them and arrays of arrays) and its tensor
// infos. A tensor's bytes are a window into the mapping, never copied;
// they are valid until Close. Metadata values are copied, and stay valid.
//
// Shapes are in ggml's order: Shape[0] is the innermost dimension, the
// one whose elements lie next to each other (ggml's ne[0]), so a matrix of
// R rows of C columns has the shape [C, R], the reverse of the order NumPy
// and ONNX write. A row of Shape[0] elements takes
// Type.RowSize(Shape[0]) bytes, and Shape[0] is always a whole number of
// the type's blocks.
//
// The file is not trusted. Every count, length and offset is checked
// against the bytes that remain before anything is allocated, products of
// dimensions are checked for overflow, tensor data must lie inside the
// file at aligned offsets without overlapping, strings must be UTF-8 and
// type ids ones that ggml knows. Anything else is an error naming what
// was wrong and where, never a panic.
package gguf
