package ir_test

import (
	"fmt"

	"github.com/berth-ml/berth/ir"
)

func ExampleInfer() {
	g := &ir.Graph{Opsets: map[string]int64{"": 17}}
	x := g.NewTensor("x", ir.Float32, ir.Shape{1, 3, 224, 224}, nil)
	w := g.NewTensor("w", ir.Float32, ir.Shape{64, 3, 7, 7}, make([]byte, 64*3*7*7*4))
	y := g.AddTensor(ir.Tensor{Name: "y", Producer: 0})
	g.Nodes = []ir.Node{{
		Name:    "conv1",
		Op:      "Conv",
		Inputs:  []ir.TensorID{x, w},
		Outputs: []ir.TensorID{y},
		Attrs: ir.Attrs{
			"strides": {Kind: ir.AttrInts, Ints: []int64{2, 2}},
			"pads":    {Kind: ir.AttrInts, Ints: []int64{3, 3, 3, 3}},
		},
	}}
	types, err := ir.Infer(g, &g.Nodes[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(types[0].DType, types[0].Shape)

	// The resolved window, as a kernel needs it.
	win, _ := ir.SpatialWindow(g, &g.Nodes[0])
	fmt.Println("pads", win.Pads, "out", win.Out)
	// Output:
	// float32 [1,64,112,112]
	// pads [3 3 3 3] out [112 112]
}
