package gguf

import (
	"path/filepath"
	"testing"

	"github.com/berth-ml/berth/weights/internal/weightstest"
)

// hostileFiles are files that must be refused, each with a piece of the
// error it must give.
// hostile is a file that must be refused.
type hostile weightstest.Hostile

func hostileFiles() []hostile {
	good := goodFile()
	with := func(change func(g *gguf)) []byte {
		g := goodFile()
		g.kvs = append([][]byte(nil), g.kvs...)
		g.infos = append([][]byte(nil), g.infos...)
		change(&g)
		return g.bytes()
	}
	addKV := func(p []byte) []byte { return with(func(g *gguf) { g.kvs = append(g.kvs, p) }) }
	oneTensor := func(p []byte, data []byte) []byte {
		return with(func(g *gguf) { g.infos = [][]byte{p}; g.data = data })
	}
	nested := arr(String, 1, str("deep"))
	for range MaxNesting + 2 {
		nested = arr(Array, 1, nested)
	}
	return []hostile{
		{"empty", nil, "not a GGUF file"},
		{"three bytes", []byte("GGU"), "not a GGUF file"},
		{"other magic", cat([]byte("GGML"), good.bytes()[4:]), `starts with "GGML"`},
		{"no version", []byte("GGUF"), "the version needs 4 bytes"},
		{"version 1", header(1, 0, 0), "version 1 is not supported"},
		{"version 0", header(0, 0, 0), "unsupported GGUF version 0"},
		{"version 4", header(4, 0, 0), "unsupported GGUF version 4"},
		{"big-endian", cat([]byte("GGUF"), []byte{0, 0, 0, 3}, make([]byte, 16)), "big-endian"},
		{"no counts", cat([]byte("GGUF"), u32(3), u64(0)), "the metadata count needs 8 bytes"},
		{"2^60 tensors", header(3, 1<<60, 0), "1152921504606846976 tensors cannot fit"},
		{"2^64-1 tensors", header(3, 1<<64-1, 0), "tensors cannot fit"},
		{"2^60 metadata", header(3, 0, 1<<60), "metadata entries cannot fit"},
		{"more metadata than bytes", cat(header(3, 0, 3), kv("a", Uint8, []byte{1})), "3 metadata entries cannot fit"},
		{"key of 2^63 bytes", cat(header(3, 0, 1), u64(1<<63), make([]byte, 20)), "a metadata key of 9223372036854775808 bytes"},
		{"string of 2^64-1 bytes", addKV(cat(str("s"), u32(uint32(String)), u64(1<<64-1))), "the string of 18446744073709551615 bytes"},
		{"2^60 uint8s", addKV(kv("a", Array, arr(Uint8, 1<<60))), "an array of 1152921504606846976 uint8 elements cannot fit"},
		{"2^61 uint64s", addKV(kv("a", Array, arr(Uint64, 1<<61))), "uint64 elements cannot fit"},
		{"2^60 strings", addKV(kv("a", Array, arr(String, 1<<60))), "string elements cannot fit"},
		{"2^60 arrays", addKV(kv("a", Array, arr(Array, 1<<60))), "array elements cannot fit"},
		{"2^60 bools", addKV(kv("a", Array, arr(Bool, 1<<60))), "bool elements cannot fit"},
		{"string array, huge element", addKV(kv("a", Array, arr(String, 2, str("x"), u64(1<<62)))), "element 1: a string of 4611686018427387904 bytes"},
		{"unknown value type", addKV(kv("a", 13, []byte{0})), "unknown value type 13"},
		{"unknown element type", addKV(kv("a", Array, arr(99, 1, []byte{0}))), "unknown array element type 99"},
		{"bool of 2", addKV(kv("a", Bool, []byte{2})), "a bool is 2, not 0 or 1"},
		{"bool array with 7", addKV(kv("a", Array, arr(Bool, 3, []byte{1, 0, 7}))), "element 2 of a bool array is 7"},
		{"bad UTF-8 key", addKV(kv("ke\xffy", Uint8, []byte{1})), `a metadata key "ke\xffy" is not valid UTF-8`},
		{"bad UTF-8 string", addKV(kv("general.name", String, str("caf\xe9"))), `the string "caf\xe9" is not valid UTF-8`},
		{"bad UTF-8 token", addKV(kv("tokenizer.ggml.merges", Array, arr(String, 3, str("a b"), str("\xc3"), str("c")))),
			`metadata "tokenizer.ggml.merges": at byte`},
		{"bad UTF-8 token, element", addKV(kv("tokenizer.ggml.merges", Array, arr(String, 3, str("a b"), str("c"), str("\xed\xa0\x80")))),
			`element 2: "\xed\xa0\x80" is not valid UTF-8`},
		{"duplicate key", addKV(kv("general.architecture", String, str("again"))), `metadata key "general.architecture" appears twice`},
		{"arrays nested too deep", addKV(kv("a", Array, nested)), "arrays nest more than 8 deep"},
		{"alignment 0", addKV(kv("general.alignment", Uint32, u32(0))), "general.alignment is a uint32 0, not a power of two"},
		{"alignment 48", addKV(kv("general.alignment", Uint32, u32(48))), "not a power of two"},
		{"alignment 2^31", addKV(kv("general.alignment", Uint32, u32(1<<31))), "not a power of two from 1 to 2^30"},
		{"alignment -32", addKV(kv("general.alignment", Int32, u32(0xffffffe0))), "general.alignment is an int32 -32"},
		{"alignment a string", addKV(kv("general.alignment", String, str("32"))), `general.alignment is a string "32"`},
		{"bad UTF-8 tensor name", oneTensor(info("w\xff", []uint64{8}, 0, 0), make([]byte, 32)), `tensor 0: at byte`},
		{"five dimensions", oneTensor(info("w", []uint64{1, 1, 1, 1, 1}, 0, 0), make([]byte, 32)), `"w" has 5 dimensions, at most 4`},
		{"shape overflows", oneTensor(info("w", []uint64{1 << 32, 1 << 32}, 0, 0), nil), "dimension 1 of the shape (4294967296) takes it beyond 2^62"},
		{"dimension of 2^64-1", oneTensor(info("w", []uint64{1<<64 - 1}, 0, 0), nil), "beyond 2^62"},
		{"empty tensor, huge dimensions", oneTensor(info("w", []uint64{0, 1 << 40, 1 << 40}, 0, 0), nil), "beyond 2^62"},
		{"unknown type", oneTensor(info("w", []uint64{8}, 99, 0), make([]byte, 32)), `"w" has an unknown ggml type id 99`},
		{"removed type", oneTensor(info("w", []uint64{32}, 4, 0), make([]byte, 32)), "unknown ggml type id 4"},
		{"count beyond the types", oneTensor(info("w", []uint64{32}, 43, 0), make([]byte, 32)), "unknown ggml type id 43"},
		{"row not whole blocks", oneTensor(info("w", []uint64{33, 2}, 2, 0), make([]byte, 64)), `"w" of shape [33 2]: ggml: 33 elements are not whole blocks of q4_0`},
		{"quantised scalar", oneTensor(info("w", nil, 8, 0), make([]byte, 64)), "not whole blocks of q8_0"},
		{"misaligned", oneTensor(info("w", []uint64{4}, 0, 8), make([]byte, 32)), `tensor "w": offset 8 is not a multiple of the alignment 32`},
		{"offset beyond the file", oneTensor(info("w", []uint64{4}, 0, 1<<40), make([]byte, 32)), "lie beyond the end of the file"},
		{"offset of 2^64-32", oneTensor(info("w", []uint64{4}, 0, 1<<64-32), make([]byte, 32)), "offset 18446744073709551584 is out of range"},
		{"offset of 2^63", oneTensor(info("w", []uint64{4}, 0, 1<<63), make([]byte, 32)), "out of range"},
		{"offset near 2^63", oneTensor(info("w", []uint64{4}, 0, 1<<63-32), make([]byte, 32)), "beyond the end"},
		{"data cut short", oneTensor(info("w", []uint64{4, 2}, 0, 0), make([]byte, 31)), "its 32 bytes at offset 0"},
		{"no data at all", oneTensor(info("w", []uint64{1}, 0, 0), nil), "beyond the end"},
		{"huge q8_0 tensor", oneTensor(info("w", []uint64{1 << 31, 1 << 30}, 8, 0), make([]byte, 64)), "beyond the end"},
		{"duplicate tensor", with(func(g *gguf) {
			g.infos = append(g.infos, info("w", []uint64{4}, 0, 32))
			g.data = make([]byte, 64)
		}), `tensor 1: the name "w" appears twice`},
		{"overlapping tensors", with(func(g *gguf) {
			g.infos = [][]byte{info("a", []uint64{16}, 0, 0), info("b", []uint64{4}, 0, 32)}
			g.data = make([]byte, 64)
		}), `tensors "a" (bytes 0 to 64 of the data section) and "b" (from 32) overlap`},
		{"same offset", with(func(g *gguf) {
			g.infos = [][]byte{info("a", []uint64{4}, 0, 32), info("b", []uint64{2}, 1, 32)}
			g.data = make([]byte, 64)
		}), "overlap"},
		{"tensor info cut short", cat(header(3, 1, 0), str("w"), u32(2), u64(8), u64(8)), "tensor 0: at byte 53: the type needs 4 bytes, 0 are left"},
	}
}

func TestHostileFiles(t *testing.T) {
	if _, err := Parse(goodFile().bytes()); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	weightstest.Refused(t, hostileFiles(), "gguf: ", parseError)
}

// Declared counts and lengths are checked before anything is allocated:
// a hostile file costs little memory however large its claims.
func TestHostileClaimsAllocateLittle(t *testing.T) {
	weightstest.AllocateLittle(t, hostileFiles(), 64<<10, parseError)
}

// Every prefix of a valid file is refused (or, once it holds every
// tensor's bytes, accepted), never a panic.
func TestTruncatedFiles(t *testing.T) {
	small := weightstest.ReadFile(t, filepath.Join(fixtures, "small.gguf"))
	nested := weightstest.ReadFile(t, filepath.Join(fixtures, "nested.gguf"))
	for name, data := range map[string][]byte{"small.gguf": small, "nested.gguf": nested, "good": goodFile().bytes()} {
		f, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		need := int64(0) // the end of the last tensor's bytes
		for _, t := range f.Tensors() {
			need = max(need, f.DataOffset+t.Offset+t.Size)
		}
		for n := range len(data) {
			_, err := Parse(data[:n])
			if int64(n) < need && err == nil {
				t.Errorf("%s cut to %d bytes (of %d needed) is accepted", name, n, need)
			}
			if int64(n) >= need && err != nil {
				t.Errorf("%s cut to %d bytes, which hold every tensor: %v", name, n, err)
			}
		}
	}
}

// parseError is Parse's error.
func parseError(data []byte) error {
	_, err := Parse(data)
	return err
}
