package cpu

import (
	"math"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// TestRMSNorm checks RMSNorm's rows against float64 arithmetic, for rows
// of vector lengths and of lengths with a tail.
func TestRMSNorm(t *testing.T) {
	for _, shape := range [][]int64{{1, 64}, {5, 24}, {3, 2, 13}, {2, 1}} {
		n := shape[len(shape)-1]
		rows := ir.Shape(shape).Elements() / n
		x, w := randF32(int(rows*n)), randF32(int(n))
		const eps = 1e-5
		tg := newTGraph(17)
		xi := tg.input("x", ir.Float32, shape...)
		wi := tg.constant("w", ir.Float32, raw.Bytes(w), n)
		node := tg.node("RMSNorm", ir.Attrs{"epsilon": {Kind: ir.AttrFloat, Float: eps}}, []ir.TensorID{xi, wi}, out{ir.Float32, shape})
		node.Domain = ir.BerthDomain
		for _, threads := range []int{1, 3} {
			y := raw.F32(exec(t, tg.g, node, threads, raw.Bytes(x))[0])
			for r := range rows {
				var ss float64
				for _, v := range x[r*n : (r+1)*n] {
					ss += float64(v) * float64(v)
				}
				inv := 1 / math.Sqrt(ss/float64(n)+float64(float32(eps)))
				for j := range n {
					want := float64(x[r*n+j]) * inv * float64(w[j])
					if d := math.Abs(float64(y[r*n+j]) - want); d > 1e-6*(1+math.Abs(want)) {
						t.Fatalf("%v: y[%d][%d] = %g, want %g", shape, r, j, y[r*n+j], want)
					}
				}
			}
		}
	}
}

// TestRotary checks Rotary against float64 arithmetic, for adjacent pairs
// and for halves.
func TestRotary(t *testing.T) {
	const tk, heads, d = 5, 3, 8
	x, cos, sin := randF32(tk*heads*d), randF32(tk*d/2), randF32(tk*d/2)
	for _, halves := range []int64{0, 1} {
		tg := newTGraph(17)
		xi := tg.input("x", ir.Float32, tk, heads, d)
		ci := tg.input("cos", ir.Float32, tk, 1, d/2)
		si := tg.input("sin", ir.Float32, tk, 1, d/2)
		node := tg.node("Rotary", ir.Attrs{"halves": {Kind: ir.AttrInt, Int: halves}}, []ir.TensorID{xi, ci, si}, out{ir.Float32, []int64{tk, heads, d}})
		node.Domain = ir.BerthDomain
		y := raw.F32(exec(t, tg.g, node, 2, raw.Bytes(x), raw.Bytes(cos), raw.Bytes(sin))[0])
		for i := range tk {
			for h := range heads {
				for j := range d / 2 {
					a, b := 2*j, 2*j+1
					if halves == 1 {
						a, b = j, j+d/2
					}
					base := (i*heads + h) * d
					c, s := float64(cos[i*d/2+j]), float64(sin[i*d/2+j])
					x0, x1 := float64(x[base+a]), float64(x[base+b])
					for k, want := range map[int]float64{a: x0*c - x1*s, b: x0*s + x1*c} {
						if math.Abs(float64(y[base+k])-want) > 1e-6*(1+math.Abs(want)) {
							t.Fatalf("halves %d: y[%d][%d][%d] = %g, want %g", halves, i, h, k, y[base+k], want)
						}
					}
				}
			}
		}
	}
}
