package berth_test

import (
	"context"
	"fmt"

	"github.com/berth-ml/berth"
)

// A model whose file leaves its batch and sequence length open runs at
// any shape: each session plans a shape the first time it sees it.
func Example_openShapes() {
	m, err := berth.Load("testdata/open/gpt/model.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	fmt.Println("open:", m.Open(), "symbols:", m.Symbols())
	exe, err := berth.Compile(m, berth.CPU, berth.Options{MaxDims: map[string]int64{"batch": 4, "seq": 32}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer exe.Close()
	s, err := exe.NewSession()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, shape := range [][]int64{{1, 5}, {2, 16}, {1, 5}} {
		ids, _ := berth.NewTensor("input_ids", shape, make([]int64, shape[0]*shape[1]))
		outs, err := s.Run(context.Background(), ids)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(outs[0].Name, outs[0].Shape, "plans:", s.Plans())
	}
	ids, _ := berth.NewTensor("input_ids", []int64{1, 40}, make([]int64, 40))
	_, err = s.Run(context.Background(), ids)
	fmt.Println(err)
	// Output:
	// open: true symbols: [batch seq]
	// logits [1 5 200] plans: 1
	// logits [2 16 200] plans: 2
	// logits [1 5 200] plans: 2
	// input "input_ids": dimension 1 (seq) is 40, above its bound 32
}
