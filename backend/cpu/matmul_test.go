package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// refMatMul is numpy.matmul in float64.
func refMatMul(tb testing.TB, a []float32, as []int64, b []float32, bs []int64) ([]float64, []int64) {
	as2, bs2 := append([]int64(nil), as...), append([]int64(nil), bs...)
	if len(as2) == 1 {
		as2 = []int64{1, as2[0]}
	}
	if len(bs2) == 1 {
		bs2 = []int64{bs2[0], 1}
	}
	m, k := as2[len(as2)-2], as2[len(as2)-1]
	n := bs2[len(bs2)-1]
	batch := bcastShape(tb, as2[:len(as2)-2], bs2[:len(bs2)-2])
	nb := elems(batch)
	out := make([]float64, nb*m*n)
	for bi := int64(0); bi < nb; bi++ {
		idx := unravel(bi, batch)
		ao := bcastIndex(idx, as2[:len(as2)-2]) * m * k
		bo := bcastIndex(idx, bs2[:len(bs2)-2]) * k * n
		for i := int64(0); i < m; i++ {
			for j := int64(0); j < n; j++ {
				var s float64
				for l := int64(0); l < k; l++ {
					s += float64(a[ao+i*k+l]) * float64(b[bo+l*n+j])
				}
				out[bi*m*n+i*n+j] = s
			}
		}
	}
	shape := append([]int64(nil), batch...)
	if len(as) > 1 {
		shape = append(shape, m)
	}
	if len(bs) > 1 {
		shape = append(shape, n)
	}
	return out, shape
}

func TestMatMul(t *testing.T) {
	cases := []struct {
		a, b []int64
	}{
		{[]int64{3, 5}, []int64{5, 7}},
		{[]int64{1, 1}, []int64{1, 1}},
		{[]int64{17, 33}, []int64{33, 19}},
		{[]int64{70, 300}, []int64{300, 45}}, // several k slices
		{[]int64{5}, []int64{5, 3}},
		{[]int64{2, 5}, []int64{5}},
		{[]int64{5}, []int64{5}},
		{[]int64{2, 3, 4, 5}, []int64{5, 6}},
		{[]int64{2, 1, 4, 5}, []int64{3, 5, 6}},
		{[]int64{4, 5}, []int64{2, 5, 6}},
		{[]int64{3, 4, 5}, []int64{1, 5, 6}},
		{[]int64{2, 12, 9, 16}, []int64{2, 12, 16, 9}},
		{[]int64{3, 0}, []int64{0, 4}},
		{[]int64{3}, []int64{2, 3, 1}},
		// Large enough for B packed in quads (wideB): whole packing on
		// one thread, bands or blocks on three.
		{[]int64{520, 70}, []int64{70, 2020}},
		{[]int64{520, 70}, []int64{70, 2040}}, // B all in quads: bands read A unpacked
	}
	for _, c := range cases {
		for _, constB := range []bool{false, true} {
			for _, threads := range []int{1, 3} {
				name := fmt.Sprintf("%v×%v/constB=%v/threads=%d", c.a, c.b, constB, threads)
				t.Run(name, func(t *testing.T) {
					a, b := randF32(int(elems(c.a))), randF32(int(elems(c.b)))
					want, shape := refMatMul(t, a, c.a, b, c.b)
					tg := newTGraph(17)
					ai := tg.input("a", ir.Float32, c.a...)
					var bi ir.TensorID
					var feeds [][]byte
					feeds = append(feeds, f32Bytes(a))
					if constB {
						bi = tg.constant("b", ir.Float32, f32Bytes(b), c.b...)
					} else {
						bi = tg.input("b", ir.Float32, c.b...)
						feeds = append(feeds, f32Bytes(b))
					}
					n := tg.node("MatMul", nil, []ir.TensorID{ai, bi}, out{ir.Float32, shape})
					got := exec(t, tg.g, n, threads, feeds...)
					near(t, "Y", asF32(got[0]), want, 1e-5, 1e-5)
				})
			}
		}
	}
}

func TestMatMulConstA(t *testing.T) {
	tg := newTGraph(17)
	a := randF32(6 * 4)
	ai := tg.constant("a", ir.Float32, f32Bytes(a), 6, 4)
	bi := tg.input("b", ir.Float32, 4, 9)
	b := randF32(36)
	n := tg.node("MatMul", nil, []ir.TensorID{ai, bi}, out{ir.Float32, []int64{6, 9}})
	want, _ := refMatMul(t, a, []int64{6, 4}, b, []int64{4, 9})
	near(t, "Y", asF32(exec(t, tg.g, n, 2, f32Bytes(b))[0]), want, 1e-5, 1e-5)
}

func TestGemm(t *testing.T) {
	const m, k, n = 13, 21, 11
	cShapes := [][]int64{nil, {n}, {1, n}, {m, 1}, {m, n}, {}, {1}, {1, 1}}
	for _, transA := range []int64{0, 1} {
		for _, transB := range []int64{0, 1} {
			for ci, cs := range cShapes {
				for _, constC := range []bool{false, true} {
					for _, constAB := range []bool{false, true} {
						name := fmt.Sprintf("tA=%d/tB=%d/C=%v/constC=%v/constAB=%v", transA, transB, cs, constC, constAB)
						t.Run(name, func(t *testing.T) {
							alpha, beta := float32(0.7), float32(1)
							if ci%2 == 0 {
								beta = -1.5
							}
							as, bs := []int64{m, k}, []int64{k, n}
							if transA == 1 {
								as = []int64{k, m}
							}
							if transB == 1 {
								bs = []int64{n, k}
							}
							a, b := randF32(int(elems(as))), randF32(int(elems(bs)))
							tg := newTGraph(13)
							var feeds [][]byte
							var ai, bi ir.TensorID
							if constAB {
								ai = tg.constant("a", ir.Float32, f32Bytes(a), as...)
								bi = tg.constant("b", ir.Float32, f32Bytes(b), bs...)
							} else {
								ai, bi = tg.input("a", ir.Float32, as...), tg.input("b", ir.Float32, bs...)
								feeds = append(feeds, f32Bytes(a), f32Bytes(b))
							}
							ins := []ir.TensorID{ai, bi}
							var cv []float32
							if cs != nil {
								cv = randF32(int(elems(cs)))
								if constC {
									ins = append(ins, tg.constant("c", ir.Float32, f32Bytes(cv), cs...))
								} else {
									ins = append(ins, tg.input("c", ir.Float32, cs...))
									feeds = append(feeds, f32Bytes(cv))
								}
							}
							node := tg.node("Gemm", ir.Attrs{
								"transA": {Kind: ir.AttrInt, Int: transA},
								"transB": {Kind: ir.AttrInt, Int: transB},
								"alpha":  {Kind: ir.AttrFloat, Float: alpha},
								"beta":   {Kind: ir.AttrFloat, Float: beta},
							}, ins, out{ir.Float32, []int64{m, n}})
							want := make([]float64, m*n)
							for i := 0; i < m; i++ {
								for j := 0; j < n; j++ {
									var s float64
									for l := 0; l < k; l++ {
										av := a[i*k+l]
										if transA == 1 {
											av = a[l*m+i]
										}
										bv := b[l*n+j]
										if transB == 1 {
											bv = b[j*k+l]
										}
										s += float64(av) * float64(bv)
									}
									s *= float64(alpha)
									if cs != nil {
										s += float64(beta) * float64(cv[bcastIndex([]int64{int64(i), int64(j)}, cs)])
									}
									want[i*n+j] = s
								}
							}
							near(t, "Y", asF32(exec(t, tg.g, node, 2, feeds...)[0]), want, 1e-5, 1e-5)
						})
					}
				}
			}
		}
	}
}

// TestGemmTiles checks that every tile shape covers C for a range of sizes.
func TestGemmTiles(t *testing.T) {
	for _, m := range []int{1, 3, 4, 5, 64, 65, 200} {
		for _, n := range []int{1, 7, 8, 9, 100, 257, 1000} {
			for _, th := range []int{1, 2, 16} {
				mt, nt := gemmTiles(m, n, th)
				if mt < 1 || nt < 1 {
					t.Fatalf("gemmTiles(%d,%d,%d) = %d,%d", m, n, th, mt, nt)
				}
			}
		}
	}
}

// TestPackBPanelRanges packs every range of panels of row-major B
// operands (rows longer than the operand, row counts around the rows
// packB copies at a time, a last panel cut short) and wants those panels
// as packBBytes makes them and the others left alone, with the copy in
// Go and in assembly.
func TestPackBPanelRanges(t *testing.T) {
	forKernels(t, testPackBPanelRanges)
}

func testPackBPanelRanges(t *testing.T) {
	for _, c := range []struct{ k, n, rs int }{{1, 16, 16}, {15, 33, 35}, {16, 64, 64}, {17, 70, 75}, {40, 48, 50}} {
		vals := make([]float32, c.k*c.rs)
		for i := range vals {
			vals[i] = float32(i%29) - 14.25
		}
		src := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(v))
		}
		want := make([]float32, packedBSize(c.k, c.n))
		packBBytes(want, src, c.k, c.n, c.rs, 1)
		pn := ceilDiv(c.n, gemmNR)
		for q0 := 0; q0 <= pn; q0++ {
			for q1 := q0; q1 <= pn; q1++ {
				got := make([]float32, len(want))
				for i := range got {
					got[i] = float32(math.NaN())
				}
				packB(got, vals, c.k, c.n, c.rs, 1, q0, q1)
				for q := 0; q < pn; q++ {
					g, w := got[q*c.k*gemmNR:][:c.k*gemmNR], want[q*c.k*gemmNR:][:c.k*gemmNR]
					inside := q >= q0 && q < q1
					for i := range g {
						if inside && g[i] != w[i] || !inside && !math.IsNaN(float64(g[i])) {
							t.Fatalf("k %d n %d rows %d apart, panels [%d, %d): panel %d element %d is %v, want %v (inside %v)", c.k, c.n, c.rs, q0, q1, q, i, g[i], w[i], inside)
						}
					}
				}
			}
		}
	}
}

// TestPackFromBytes packs operands read from unaligned bytes and wants
// exactly what packA and packB make of the same values.
func TestPackFromBytes(t *testing.T) {
	for _, c := range []struct{ m, k, n int }{{1, 1, 1}, {7, 5, 17}, {13, 40, 33}, {6, 16, 16}, {12, 11, 20}} {
		vals := make([]float32, max(c.m*c.k, c.k*c.n))
		for i := range vals {
			vals[i] = float32(i%23) - 11.5
		}
		raw := make([]byte, 4*len(vals)+1)
		for i, v := range vals {
			binary.LittleEndian.PutUint32(raw[1+4*i:], math.Float32bits(v))
		}
		src := raw[1:] // never 4-byte aligned
		for _, tr := range []bool{false, true} {
			rs, cs := c.k, 1
			if tr {
				rs, cs = 1, c.m
			}
			// Alpha 1 takes packA's assembly paths.
			for _, alpha := range []float32{0.5, 1} {
				want, got := make([]float32, packedASize(c.m, c.k)), make([]float32, packedASize(c.m, c.k))
				packA(want, vals, c.m, c.k, rs, cs, alpha, 0, ceilDiv(c.m, gemmMR))
				packABytes(got, src, c.m, c.k, rs, cs, alpha)
				if !slices.Equal(got, want) {
					t.Errorf("A %v transposed %v alpha %v: packed from bytes differs", c, tr, alpha)
				}
			}
			rs, cs = c.n, 1
			if tr {
				rs, cs = 1, c.k
			}
			want, got := make([]float32, packedBSize(c.k, c.n)), make([]float32, packedBSize(c.k, c.n))
			packB(want, vals, c.k, c.n, rs, cs, 0, ceilDiv(c.n, gemmNR))
			packBBytes(got, src, c.k, c.n, rs, cs)
			if !slices.Equal(got, want) {
				t.Errorf("B %v transposed %v: packed from bytes differs", c, tr)
			}
			// Through f32src, from one element on.
			if c.k*c.n > 1 {
				k := c.k - 1
				want, got = make([]float32, packedBSize(k, c.n)), make([]float32, packedBSize(k, c.n))
				f32src{f: vals}.packB(want, 1, k, c.n, rs, cs)
				f32src{b: src}.packB(got, 1, k, c.n, rs, cs)
				if !slices.Equal(got, want) {
					t.Errorf("B %v transposed %v: f32src from bytes differs", c, tr)
				}
			}
		}
	}
}
