package quant

import (
	"encoding/binary"

	"github.com/berth-ml/berth/weights/ggml"
)

// The tile kernels: the products of several activation rows by one or
// more weight rows at once, so that a weight block is read and unpacked
// once for all of them. Each output takes the steps its dot takes (see
// ref.go), in the same order, and so has the same bits: only the order
// in which the outputs advance differs.

// tileFunc computes a tile of y: y[i·ldy+j] for i < mr and j < nr, the
// product of the activation row at a[i·aRow:] (prepared, or float32 as
// the dot kernels take it) by the weight row at w[j·wRow:], rows of k
// values.
type tileFunc func(y []float32, ldy int, w []byte, wRow int, a []byte, aRow int, k int)

// goTileRows is the activation rows of the Go tile kernels; they take one
// weight row.
const goTileRows = 4

// q8Rows splits goTileRows prepared Q8_0 rows, aRow bytes apart.
func q8Rows(a []byte, aRow, k int) (q [goTileRows][]byte, d [goTileRows][]float32) {
	for i := range goTileRows {
		q[i], d[i], _ = q8Row(a[i*aRow:], k)
	}
	return q, d
}

func tileQ8_0Go(y []float32, ldy int, w []byte, _ int, a []byte, aRow int, k int) {
	tile32Go(y, ldy, w, a, aRow, k, ggml.Q8_0)
}

func tileQ4_0Go(y []float32, ldy int, w []byte, _ int, a []byte, aRow int, k int) {
	tile32Go(y, ldy, w, a, aRow, k, ggml.Q4_0)
}

// tile32Go is the Go tile of Q8_0 or Q4_0 weights (t): 32-value blocks of
// a scale and the values, without minimums.
func tile32Go(y []float32, ldy int, w []byte, a []byte, aRow, k int, t ggml.Type) {
	size := int(t.TypeSize())
	xq, xd := q8Rows(a, aRow, k)
	var acc [goTileRows]lanes
	var v [32]int32
	for b := range k / 32 {
		blk := w[size*b : size*(b+1) : size*(b+1)]
		if t == ggml.Q8_0 {
			unpackQ8_0(&v, blk)
		} else {
			unpackQ4_0(&v, blk)
		}
		dw := scale(blk)
		for i := range goTileRows {
			s := dot4(&v, xq[i][32*b:])
			acc[i].add(b, dw*xd[i][b], &s)
		}
	}
	for i := range goTileRows {
		y[i*ldy] = acc[i].sum()
	}
}

func tileF16Go(y []float32, ldy int, w []byte, _ int, a []byte, aRow int, k int) {
	var x [goTileRows][]float32
	for i := range goTileRows {
		x[i] = f32s(a[i*aRow:], k)
	}
	w = w[:2*k]
	var acc [goTileRows][32]float32
	var wv [32]float32
	k32 := k &^ 31
	for e := 0; e < k32; e += 32 {
		for l := range 32 {
			wv[l] = half(binary.LittleEndian.Uint16(w[2*(e+l):]))
		}
		for i := range goTileRows {
			xi := x[i][e : e+32 : e+32]
			for l := range 32 {
				acc[i][l] += float32(wv[l] * xi[l])
			}
		}
	}
	for i := range goTileRows {
		y[i*ldy] = reduce32(&acc[i]) + tailF16(w, x[i], k32)
	}
}
