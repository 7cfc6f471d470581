package raw

import "testing"

func TestViews(t *testing.T) {
	words := make([]uint64, 4)
	b := Bytes(words)
	if len(b) != 32 {
		t.Fatalf("Bytes gave %d bytes", len(b))
	}
	f := F32(b)
	f[1] = 1.5
	if len(f) != 8 || F32(b)[1] != 1.5 {
		t.Fatal("F32 does not view the same memory")
	}
	if len(I64(b[:15])) != 1 || F32(b[:3]) != nil {
		t.Error("partial elements must be dropped")
	}
	if !Aligned(b, 8) || Aligned(b[1:], 2) {
		t.Error("Aligned is wrong")
	}
	defer func() {
		if recover() == nil {
			t.Error("a misaligned view did not panic")
		}
	}()
	F32(b[1:])
}
