package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// floats adds a float32 constant of shape [len(v)].
func (t *tg) floats(v ...float32) ir.TensorID {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return t.g.NewTensor(fmt.Sprintf("c%d", len(t.g.Tensors)), ir.Float32, ir.Shape{int64(len(v))}, b)
}

// coarse rounds the float32 data of the last input added to halves, so
// that many values tie (−0 among them).
func (t *tg) coarse() {
	b := t.in[len(t.in)-1]
	for i := 0; i < len(b); i += 4 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
		binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(math.Round(float64(v)*2)/2)))
	}
}

func TestPad(t *testing.T) {
	requireGPU(t)
	checkGraphs(t, []graphCase{
		{"constant", 13, func(g *tg) {
			g.node("Pad", nil, 1, g.input(ir.Float32, 2, 3, 5, 7), g.ints(0, 0, 1, 2, 0, 0, 3, 1))
		}},
		{"constant-value-input", 13, func(g *tg) {
			g.node("Pad", nil, 1, g.input(ir.Float32, 3, 5, 7), g.ints(1, 0, 2, 0, 3, 1), g.input(ir.Float32))
		}},
		{"constant-value-const", 13, func(g *tg) {
			g.node("Pad", nil, 1, g.input(ir.Float32, 1, 3, 9, 8), g.ints(0, 0, 0, 0, 0, 0, 5, 4), g.scalar(0.25))
		}},
		{"crop", 13, func(g *tg) {
			g.node("Pad", nil, 1, g.input(ir.Float32, 4, 9, 10), g.ints(-1, 2, -3, 1, -2, 2))
		}},
		{"crop-to-one", 13, func(g *tg) {
			// The middle axis keeps its first element of three: the axes
			// around it must not merge.
			g.node("Pad", nil, 1, g.input(ir.Float32, 4, 3, 10), g.ints(0, 0, 0, 0, -2, 0))
		}},
		{"reflect", 13, func(g *tg) {
			g.node("Pad", ir.Attrs{"mode": strv("reflect")}, 1, g.input(ir.Float32, 2, 3, 6, 5), g.ints(0, 0, 2, 4, 0, 0, 5, 3))
		}},
		{"wrap", 19, func(g *tg) {
			g.node("Pad", ir.Attrs{"mode": strv("wrap")}, 1, g.input(ir.Float32, 2, 3, 6, 5), g.ints(0, 1, 2, 4, 0, 2, 5, 3))
		}},
		{"crop-then-reflect", 13, func(g *tg) {
			g.node("Pad", ir.Attrs{"mode": strv("reflect")}, 1, g.input(ir.Float32, 2, 7, 6), g.ints(0, -2, 3, 0, 1, -1))
		}},
		{"edge", 13, func(g *tg) {
			g.node("Pad", ir.Attrs{"mode": strv("edge")}, 1, g.input(ir.Float32, 2, 4, 5), g.ints(0, 3, 1, 0, 2, 6))
		}},
		{"int64", 13, func(g *tg) {
			g.node("Pad", nil, 1, g.input(ir.Int64, 3, 4), g.ints(1, 2, 3, 0))
		}},
		{"bool-edge", 13, func(g *tg) {
			g.node("Pad", ir.Attrs{"mode": strv("edge")}, 1, g.input(ir.Bool, 3, 4, 2), g.ints(1, 0, 2, 1, 2, 0))
		}},
		{"axes", 18, func(g *tg) {
			g.node("Pad", nil, 1, g.input(ir.Float32, 2, 3, 5, 7), g.ints(1, 2, 3, 4), ir.NoTensor, g.ints(-1, 1))
		}},
		{"attribute", 2, func(g *tg) {
			g.node("Pad", ir.Attrs{"pads": ints(1, 1, 0, 2), "value": floatv(-1.5)}, 1, g.input(ir.Float32, 6, 5))
		}},
		{"rank-7", 13, func(g *tg) {
			// Merging the unpadded axes brings it within the kernel's rank.
			g.node("Pad", nil, 1, g.input(ir.Float32, 2, 3, 2, 2, 3, 4, 5), g.ints(0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 2, 0))
		}},
	})
}

func TestResize(t *testing.T) {
	requireGPU(t)
	var cases []graphCase
	x := []int64{2, 3, 6, 7}
	// Every coordinate transformation with each mode, up and down.
	for _, ctm := range []string{"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"} {
		for _, mode := range []string{"nearest", "linear", "cubic"} {
			if ctm == "tf_half_pixel_for_nn" && mode != "nearest" {
				continue
			}
			for _, sc := range [][]float32{{1, 1, 2, 1.5}, {1, 1, 0.5, 0.75}} {
				attrs := ir.Attrs{"mode": strv(mode), "coordinate_transformation_mode": strv(ctm)}
				cases = append(cases, graphCase{fmt.Sprintf("%s/%s/%v", ctm, mode, sc), 13, func(g *tg) {
					g.node("Resize", attrs, 1, g.input(ir.Float32, x...), ir.NoTensor, g.floats(sc...))
				}})
			}
		}
	}
	for _, nm := range []string{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"} {
		attrs := ir.Attrs{"mode": strv("nearest"), "nearest_mode": strv(nm)}
		cases = append(cases, graphCase{"nearest_mode/" + nm, 13, func(g *tg) {
			g.node("Resize", attrs, 1, g.input(ir.Float32, 1, 2, 5, 6), ir.NoTensor, ir.NoTensor, g.ints(1, 2, 13, 9))
		}})
	}
	cases = append(cases,
		graphCase{"sizes-linear", 13, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("linear")}, 1, g.input(ir.Float32, 1, 3, 20, 30), ir.NoTensor, ir.NoTensor, g.ints(1, 3, 33, 17))
		}},
		graphCase{"to-one", 13, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("linear"), "coordinate_transformation_mode": strv("pytorch_half_pixel")}, 1,
				g.input(ir.Float32, 2, 4, 5), ir.NoTensor, ir.NoTensor, g.ints(2, 1, 3))
		}},
		graphCase{"cubic-exclude-outside", 13, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("cubic"), "cubic_coeff_a": floatv(-0.5), "exclude_outside": intv(1)}, 1,
				g.input(ir.Float32, 1, 1, 8, 8), ir.NoTensor, g.floats(1, 1, 1.75, 0.6))
		}},
		graphCase{"tf_crop_and_resize-linear", 13, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("linear"), "coordinate_transformation_mode": strv("tf_crop_and_resize"), "extrapolation_value": floatv(7)}, 1,
				g.input(ir.Float32, 1, 2, 10, 10), g.floats(0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4), ir.NoTensor, g.ints(1, 2, 6, 7))
		}},
		graphCase{"tf_crop_and_resize-nearest", 13, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("nearest"), "coordinate_transformation_mode": strv("tf_crop_and_resize"), "extrapolation_value": floatv(-3)}, 1,
				g.input(ir.Float32, 1, 2, 10, 10), g.floats(0, 0, 0.4, -0.3, 1, 1, 1.2, 0.6), ir.NoTensor, g.ints(1, 2, 5, 8))
		}},
		graphCase{"channels-linear", 13, func(g *tg) {
			// The channel axis resized too: a tap combination over three axes.
			g.node("Resize", ir.Attrs{"mode": strv("linear")}, 1, g.input(ir.Float32, 2, 4, 6, 5), ir.NoTensor, g.floats(1, 1.5, 2, 0.8))
		}},
		graphCase{"last-axis-unscaled", 13, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("linear")}, 1, g.input(ir.Float32, 2, 3, 6, 5), ir.NoTensor, g.floats(1, 1, 2.5, 1))
		}},
		graphCase{"nearest-int64", 13, func(g *tg) {
			g.node("Resize", nil, 1, g.input(ir.Int64, 1, 2, 3, 4), ir.NoTensor, g.floats(1, 1, 3, 2))
		}},
		graphCase{"axes", 18, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("linear"), "axes": ints(2, 3)}, 1, g.input(ir.Float32, 2, 3, 6, 5), ir.NoTensor, g.floats(2, 0.6))
		}},
		graphCase{"resize-10", 10, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("linear")}, 1, g.input(ir.Float32, 1, 3, 5, 5), g.floats(1, 1, 2, 3))
		}},
		graphCase{"upsample-9", 9, func(g *tg) {
			g.node("Upsample", nil, 1, g.input(ir.Float32, 1, 3, 4, 5), g.floats(1, 1, 2, 2))
		}},
		graphCase{"detector-input", 17, func(g *tg) {
			// torchvision's GeneralizedRCNNTransform: bilinear, half_pixel.
			g.node("Resize", ir.Attrs{"mode": strv("linear"), "coordinate_transformation_mode": strv("half_pixel")}, 1,
				g.input(ir.Float32, 1, 3, 96, 128), ir.NoTensor, ir.NoTensor, g.ints(1, 3, 240, 320))
		}},
	)
	checkGraphs(t, cases)
}

func TestGatherND(t *testing.T) {
	requireGPU(t)
	checkBuilds(t, 13, []buildCase{
		{"elements", func(g *tg) {
			g.node("GatherND", nil, 1, g.input(ir.Float32, 4, 5), g.indices(ir.Int64, 4, 6, 2))
		}},
		{"rows", func(g *tg) {
			g.node("GatherND", nil, 1, g.input(ir.Float32, 7, 3, 5), g.indices(ir.Int64, 3, 2, 4, 1))
		}},
		{"int32-indices", func(g *tg) {
			g.node("GatherND", nil, 1, g.input(ir.Float32, 3, 3, 8), g.indices(ir.Int32, 3, 5, 2))
		}},
		{"batch_dims", func(g *tg) {
			g.node("GatherND", ir.Attrs{"batch_dims": intv(1)}, 1, g.input(ir.Float32, 3, 4, 5, 2), g.indices(ir.Int64, 4, 3, 6, 2))
		}},
		{"int64-data", func(g *tg) {
			g.node("GatherND", nil, 1, g.input(ir.Int64, 5, 6), g.indices(ir.Int64, 5, 9, 1))
		}},
		{"bool-data", func(g *tg) {
			g.node("GatherND", nil, 1, g.input(ir.Bool, 6, 5), g.indices(ir.Int64, 5, 4, 2))
		}},
	})
}

func TestTopK(t *testing.T) {
	requireGPU(t)
	cases := []struct {
		name   string
		dt     ir.DType
		shape  []int64
		k      int64
		attrs  ir.Attrs
		coarse bool // many ties
	}{
		{"last", ir.Float32, []int64{3, 100}, 10, nil, false},
		{"smallest", ir.Float32, []int64{3, 100}, 7, ir.Attrs{"largest": intv(0)}, false},
		{"ties", ir.Float32, []int64{4, 300}, 50, nil, true},
		{"middle-axis", ir.Float32, []int64{2, 50, 3}, 5, ir.Attrs{"axis": intv(1)}, true},
		{"all", ir.Float32, []int64{2, 33}, 33, ir.Attrs{"largest": intv(0)}, true},
		{"one", ir.Float32, []int64{5, 17}, 1, nil, false},
		{"unsorted", ir.Float32, []int64{2, 64}, 9, ir.Attrs{"sorted": intv(0)}, false},
		{"int64", ir.Int64, []int64{3, 40}, 12, nil, false},
		{"int32-smallest", ir.Int32, []int64{3, 40}, 12, ir.Attrs{"largest": intv(0)}, false},
		// Rows longer than topKDirect go through topk_select.
		{"long", ir.Float32, []int64{2, 20000}, 1000, nil, false},
		{"long-ties", ir.Float32, []int64{3, 9000}, 2000, nil, true},
		{"long-smallest-axis0", ir.Float32, []int64{5000, 2}, 300, ir.Attrs{"axis": intv(0), "largest": intv(0)}, true},
		{"long-int64-ties", ir.Int64, []int64{1, 10000}, 4000, nil, false},
		{"long-all", ir.Float32, []int64{1, 5000}, 5000, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newTG(11)
			x := g.input(tc.dt, tc.shape...)
			if tc.coarse {
				g.coarse()
			}
			g.node("TopK", tc.attrs, 2, x, g.ints(tc.k))
			g.check(t)
		})
	}
}

// TestIndexingRefusals needs no GPU: what the CUDA kernels do not do is
// an error naming the node, and a table that needs a value the graph
// computes asks for it as the CPU backend does.
func TestIndexingRefusals(t *testing.T) {
	cases := []struct {
		name  string
		opset int64
		build func(g *tg)
		want  string
	}{
		{"antialias", 18, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("linear"), "antialias": intv(1)}, 1, g.input(ir.Float32, 1, 1, 8, 8), ir.NoTensor, g.floats(1, 1, 0.5, 0.5))
		}, "antialias"},
		{"cubic-int64", 13, func(g *tg) {
			g.node("Resize", ir.Attrs{"mode": strv("cubic")}, 1, g.input(ir.Int64, 1, 1, 4, 4), ir.NoTensor, g.floats(1, 1, 2, 2))
		}, "int64"},
		{"convtranspose-4d", 13, func(g *tg) {
			g.node("ConvTranspose", nil, 1, g.input(ir.Float32, 1, 1, 2, 2, 2, 2), g.constant(ir.Float32, 1, 1, 1, 1, 1, 1))
		}, "4 spatial axes"},
		{"topk-float64", 11, func(g *tg) {
			g.node("TopK", nil, 2, g.input(ir.Float64, 8), g.ints(2))
		}, "float64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newTG(tc.opset)
			tc.build(g)
			var extras [][]byte
			_, err := buildNode(g.g, 0, 1, false, &extras)
			name := g.g.Nodes[0].Name
			if err == nil || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming node %q and %q", err, name, tc.want)
			}
		})
	}
	// Pads that the graph computes: a want of their value.
	g := newTG(13)
	pads := g.input(ir.Int64, 4)
	g.g.Nodes = append(g.g.Nodes, ir.Node{Name: "pad", Op: "Pad", Inputs: []ir.TensorID{g.input(ir.Float32, 2, 3), pads}})
	g.g.Nodes[0].Outputs = []ir.TensorID{g.g.NewTensor("out0", ir.Float32, ir.Shape{4, 5}, nil)}
	var extras [][]byte
	_, err := buildNode(g.g, 0, 1, false, &extras)
	var ve *ir.ValueError
	if !errors.As(err, &ve) || ve.Tensor != g.g.Tensor(pads).Name {
		t.Fatalf("err = %v, want an ir.ValueError for %q", err, g.g.Tensor(pads).Name)
	}
}

// TestEmptyOutputBuildsNothing builds, without a GPU, a Pad whose output
// is empty but long along one axis ([0, 2³³+1]): the node launches nothing
// and builds no table (a table of its long axis would take 32 GiB).
func TestEmptyOutputBuildsNothing(t *testing.T) {
	g := &ir.Graph{Name: "empty", Opsets: map[string]int64{"": 17}}
	x := g.NewTensor("x", ir.Float32, ir.Shape{0, 1}, nil)
	pads := g.NewTensor("pads", ir.Int64, ir.Shape{4}, raw.Bytes([]int64{0, 0, 0, 1 << 33}))
	y := g.AddTensor(ir.Tensor{Name: "y", DType: ir.Float32, Shape: ir.Shape{0, 1<<33 + 1}, Producer: 0})
	g.Nodes = []ir.Node{{Name: "pad", Op: "Pad", Inputs: []ir.TensorID{x, pads}, Outputs: []ir.TensorID{y}}}
	g.Inputs, g.Outputs = []ir.TensorID{x}, []ir.TensorID{y}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var extras [][]byte
	c, err := buildNode(g, 0, 132, false, &extras)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.launches) != 0 || len(extras) != 0 {
		t.Errorf("%d launches, %d tables for an empty output", len(c.launches), len(extras))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("building allocated %d bytes", grew)
	}
}
