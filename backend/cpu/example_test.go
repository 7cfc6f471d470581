package cpu_test

import (
	"fmt"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// A 3×3 box filter over a 4×4 image, padded so the output keeps its size,
// followed by a ReLU that runs in place.
func Example() {
	g := &ir.Graph{Opsets: map[string]int64{"": 17}}
	x := g.NewTensor("x", ir.Float32, ir.Shape{1, 1, 4, 4}, nil)
	box := make([]float32, 9)
	for i := range box {
		box[i] = 1
	}
	w := g.NewTensor("w", ir.Float32, ir.Shape{1, 1, 3, 3}, raw.Bytes(box))
	y := g.AddTensor(ir.Tensor{Name: "y", DType: ir.Float32, Shape: ir.Shape{1, 1, 4, 4}, Producer: 0})
	g.Nodes = append(g.Nodes,
		ir.Node{Name: "conv", Op: "Conv", Inputs: []ir.TensorID{x, w}, Outputs: []ir.TensorID{y},
			Attrs: ir.Attrs{"pads": {Kind: ir.AttrInts, Ints: []int64{1, 1, 1, 1}}}},
		ir.Node{Name: "relu", Op: "Relu", Inputs: []ir.TensorID{y}, Outputs: []ir.TensorID{y}})

	conv, scratch, err := cpu.Build(g, &g.Nodes[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	relu, _, err := cpu.Build(g, &g.Nodes[1])
	if err != nil {
		fmt.Println(err)
		return
	}

	workers := cpu.NewWorkers(2)
	defer workers.Close()
	image := make([]float32, 16)
	for i := range image {
		image[i] = float32(i%4) - 1.5 // columns -1.5, -0.5, 0.5, 1.5
	}
	out := make([]float32, 16)
	conv.Run(workers, [][]byte{raw.Bytes(image), g.Tensor(w).Data}, [][]byte{raw.Bytes(out)}, make([]byte, scratch))
	relu.Run(workers, [][]byte{raw.Bytes(out)}, [][]byte{raw.Bytes(out)}, nil)
	for r := 0; r < 4; r++ {
		fmt.Println(out[4*r : 4*r+4])
	}
	// Output:
	// [0 0 3 4]
	// [0 0 4.5 6]
	// [0 0 4.5 6]
	// [0 0 3 4]
}
