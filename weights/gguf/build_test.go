package gguf

import (
	"encoding/binary"
	"math"
)

// A minimal GGUF writer for tests, each piece written separately so that
// a test can write any piece wrong.

func u32(x uint32) []byte { return binary.LittleEndian.AppendUint32(nil, x) }
func u64(x uint64) []byte { return binary.LittleEndian.AppendUint64(nil, x) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// str is a GGUF string: its length, then its bytes.
func str(s string) []byte { return cat(u64(uint64(len(s))), []byte(s)) }

// kv is a metadata entry: key, type, then the value's bytes.
func kv(key string, k Kind, value []byte) []byte { return cat(str(key), u32(uint32(k)), value) }

// arr is an array value's bytes: element type, count, then the elements.
func arr(elem Kind, n uint64, elems ...[]byte) []byte {
	return cat(u32(uint32(elem)), u64(n), cat(elems...))
}

func f32s(xs ...float32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// info is a tensor info: name, dimension count, dimensions, type, offset.
func info(name string, shape []uint64, typ uint32, offset uint64) []byte {
	b := cat(str(name), u32(uint32(len(shape))))
	for _, d := range shape {
		b = append(b, u64(d)...)
	}
	return cat(b, u32(typ), u64(offset))
}

// gguf is a whole file: header, metadata, tensor infos, padding to the
// alignment, then data.
type gguf struct {
	version   uint32
	kvs       [][]byte
	infos     [][]byte
	alignment int
	data      []byte
}

func (g gguf) bytes() []byte {
	if g.version == 0 {
		g.version = 3
	}
	if g.alignment == 0 {
		g.alignment = DefaultAlignment
	}
	b := cat([]byte("GGUF"), u32(g.version), u64(uint64(len(g.infos))), u64(uint64(len(g.kvs))))
	for _, p := range g.kvs {
		b = append(b, p...)
	}
	for _, p := range g.infos {
		b = append(b, p...)
	}
	for len(b)%g.alignment != 0 {
		b = append(b, 0)
	}
	return append(b, g.data...)
}

// header is just the start of a file: magic, version and the two counts.
func header(version uint32, nTensors, nKV uint64) []byte {
	return cat([]byte("GGUF"), u32(version), u64(nTensors), u64(nKV))
}

// goodFile is a small valid file: two metadata entries and a 4×2 f32
// tensor.
func goodFile() gguf {
	return gguf{
		kvs: [][]byte{
			kv("general.architecture", String, str("test")),
			kv("tokenizer.ggml.tokens", Array, arr(String, 3, str("a"), str("b"), str("c"))),
		},
		infos: [][]byte{info("w", []uint64{4, 2}, 0, 0)},
		data:  f32s(1, 2, 3, 4, 5, 6, 7, 8),
	}
}
