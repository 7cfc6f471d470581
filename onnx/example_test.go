package onnx_test

import (
	"fmt"
	"log"

	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

func ExampleImport() {
	m, err := onnx.Import("testdata/external/model.onnx")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close() // unmaps the model and its weights

	g := m.Graph
	fmt.Println("producer:", m.ProducerName, "opset:", m.Opsets[""])
	fmt.Println("weights:", g.WeightBytes(), "bytes")

	// Shapes are inferred by package passes.
	if err := passes.Prepare(g, nil); err != nil {
		log.Fatal(err)
	}
	for _, n := range g.Nodes {
		fmt.Println(n.Op, "→", g.Describe(n.Outputs[0]))
	}
	// Output:
	// producer: gen_onnx_testdata opset: 13
	// weights: 192 bytes
	// Gemm → h float32[3,8]
	// Relu → r float32[3,8]
	// Gemm → y float32[3,2]
}
