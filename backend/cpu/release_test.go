package cpu

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/berth-ml/berth/ir"
)

// TestBuildReleasesPackedRows checks that a product packing a large
// constant B hands BuildOptions.Release every byte of B, in runs of rows
// copied before the next run is read, and that packing in runs lays B out
// exactly as packing it whole does, from aligned and unaligned bytes.
func TestBuildReleasesPackedRows(t *testing.T) {
	cases := []struct {
		m, k, n int64
		bands   bool // force band packing (runs of k slices)
		runs    int  // releases wanted at least
	}{
		{m: 2, k: 64, n: 40000, runs: 2},            // 160000 bytes a row: 52 rows a run
		{m: 3, k: 700, n: 3001, runs: 2},            // 12004 bytes a row, odd panel
		{m: 8, k: 600, n: 40, bands: true, runs: 3}, // three k slices
	}
	for _, c := range cases {
		for _, shift := range []int{0, 1} {
			t.Run(fmt.Sprintf("%dx%dx%d/bands=%v/shift=%d", c.m, c.k, c.n, c.bands, shift), func(t *testing.T) {
				if c.bands {
					bandsAlways = true
					defer func() { bandsAlways = false }()
				}
				bv := randF32(int(c.k * c.n))
				buf := make([]byte, 4*len(bv)+1)
				data := buf[shift : shift+4*len(bv)]
				copy(data, f32Bytes(bv))
				tg := newTGraph(17)
				ai := tg.input("a", ir.Float32, c.m, c.k)
				bi := tg.constant("b", ir.Float32, data, c.k, c.n)
				n := tg.node("MatMul", nil, []ir.TensorID{ai, bi}, out{ir.Float32, []int64{c.m, c.n}})
				base := uintptr(unsafe.Pointer(&data[0]))
				type run struct{ lo, hi int }
				var runs []run
				k, _, err := BuildWith(tg.g, n, BuildOptions{Threads: 2, Release: func(b []byte) {
					lo := int(uintptr(unsafe.Pointer(&b[0])) - base)
					if lo < 0 || lo+len(b) > len(data) {
						t.Fatalf("released %d bytes at %d, outside B's %d", len(b), lo, len(data))
					}
					runs = append(runs, run{lo, lo + len(b)})
				}})
				if err != nil {
					t.Fatal(err)
				}
				if len(runs) < c.runs {
					t.Errorf("%d releases, want at least %d", len(runs), c.runs)
				}
				slices.SortFunc(runs, func(x, y run) int { return x.lo - y.lo })
				at := 0
				for _, r := range runs {
					if r.lo != at {
						t.Fatalf("releases %v leave a gap or overlap at byte %d", runs, at)
					}
					at = r.hi
				}
				if at != len(data) {
					t.Fatalf("releases end at byte %d of %d", at, len(data))
				}
				mk := k.(*matmulKernel)
				if c.bands != (mk.per != 0) {
					t.Fatalf("band packing %v, want %v", mk.per != 0, c.bands)
				}
				if c.bands {
					return // TestMatMulBands checks band-packed products
				}
				whole := make([]float32, len(mk.bPre))
				constSrc(tg.g.Tensor(bi)).packB(whole, 0, int(c.k), int(c.n), int(c.n), 1)
				if !slices.Equal(raw32(f32Bytes(whole)), raw32(f32Bytes(mk.bPre))) {
					t.Fatal("B packed in runs of rows differs from B packed whole")
				}
			})
		}
	}
}

// TestGatherReadsLargeTables checks that Gather reads the rows it picks
// from a constant table of gatherReadMin bytes or more through
// BuildOptions.Read, copies them from memory where Read declines, and
// leaves smaller tables alone.
func TestGatherReadsLargeTables(t *testing.T) {
	for _, c := range []struct {
		rows, cols int64
		declines   bool
		wantReads  bool
	}{
		{rows: gatherReadMin / 4 / 64, cols: 64, wantReads: true},
		{rows: gatherReadMin / 4 / 64, cols: 64, declines: true, wantReads: true},
		{rows: 100, cols: 64},
	} {
		tv := randF32(int(c.rows * c.cols))
		tg := newTGraph(13)
		x := tg.constant("table", ir.Float32, f32Bytes(tv), c.rows, c.cols)
		ids := []int64{3, c.rows - 1, 0, 3, -1}
		ix := tg.input("ids", ir.Int64, int64(len(ids)))
		n := tg.node("Gather", nil, []ir.TensorID{x, ix}, out{ir.Float32, []int64{int64(len(ids)), c.cols}})
		reads := 0
		k, _, err := BuildWith(tg.g, n, BuildOptions{Threads: 1, Read: func(dst, src []byte) bool {
			reads++
			if c.declines {
				return false
			}
			copy(dst, src)
			return true
		}})
		if err != nil {
			t.Fatal(err)
		}
		ib := make([]byte, 8*len(ids))
		for i, v := range ids {
			binary.LittleEndian.PutUint64(ib[8*i:], uint64(v))
		}
		y := make([]byte, 4*len(ids)*int(c.cols))
		k.Run(nil, [][]byte{tg.g.Tensor(x).Data, ib}, [][]byte{y}, nil)
		if got := reads > 0; got != c.wantReads {
			t.Errorf("%d rows: %d reads through Read, want some: %v", c.rows, reads, c.wantReads)
		}
		yv := asF32(y)
		for i, id := range ids {
			if id < 0 {
				id += c.rows
			}
			for j := range c.cols {
				if got, want := yv[i*int(c.cols)+int(j)], tv[id*c.cols+j]; got != want {
					t.Fatalf("%d rows: row %d column %d = %g, want %g", c.rows, i, j, got, want)
				}
			}
		}
	}
}
