package ir

import (
	"math"
	"testing"
)

// TestTableBytes checks the bound on the host tables of Pad, Tile and
// Resize against their output shapes.
func TestTableBytes(t *testing.T) {
	for _, c := range []struct {
		op    string
		mode  string
		shape Shape
		want  int64
	}{
		{"Tile", "", Shape{2, 3}, 4 * 5},
		{"Pad", "", Shape{1 << 30}, 4 << 30},
		{"Resize", "", Shape{1, 3, 8, 8}, 9 * 20},
		{"Resize", "linear", Shape{1, 3, 8, 8}, 17 * 20},
		{"Resize", "cubic", Shape{1, 3, 8, 8}, 33 * 20},
		{"Upsample", "nearest", Shape{4}, 9 * 4},
		{"Add", "", Shape{1 << 40}, 0},
		{"Tile", "", Shape{0, 1 << 33}, 0},                           // empty: no table
		{"Tile", "", Shape{math.MaxInt64 / 2, math.MaxInt64 / 2}, 0}, // not a valid shape
	} {
		g := &Graph{}
		x := g.NewTensor("x", Float32, Shape{1}, nil)
		y := g.AddTensor(Tensor{Name: "y", DType: Float32, Shape: c.shape, Producer: 0})
		n := Node{Op: c.op, Inputs: []TensorID{x}, Outputs: []TensorID{y}}
		if c.mode != "" {
			n.Attrs = Attrs{"mode": {Kind: AttrString, String: c.mode}}
		}
		g.Nodes = append(g.Nodes, n)
		if got := TableBytes(g, &g.Nodes[0]); got != c.want {
			t.Errorf("%s %s %v: %d bytes, want %d", c.op, c.mode, c.shape, got, c.want)
		}
	}
}
