// Package safetensors reads safetensors files, the weight format of
// Hugging Face models: single files and folders of shards.
//
// A file is an 8-byte little-endian header length, a JSON header naming
// each tensor's dtype, shape and byte range in the data section that
// follows, and the data. OpenFile maps a file read-only; a tensor's bytes
// are a window into the mapping, never copied, valid until Close. Shapes
// are in the usual row-major order: the last dimension is the innermost.
//
// Open takes a file or a folder. A folder's model.safetensors.index.json
// (or its one *.safetensors.index.json) names the shard holding each
// tensor; each shard is mapped once. Without an index, every
// *.safetensors file of the folder is read. The folder's config.json, if
// there is one, is kept as raw JSON.
//
// The files are not trusted. The header is bounded (MaxHeaderBytes) and
// checked against the file before it is read; it must be UTF-8 JSON with
// no name twice; each tensor's byte count must equal its elements times
// its dtype's size, with overflow checked, and lie inside the data section
// without overlapping another. Shard names must stay inside the folder: no
// absolute paths, no "..", and no symbolic links that lead out of it.
// Anything else is an error naming what was wrong, never a panic.
package safetensors
