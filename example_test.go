package berth_test

import (
	"context"
	"fmt"

	"github.com/berth-ml/berth"
)

func Example() {
	m, err := berth.Load("testdata/models/resnet/model.onnx")
	if err != nil {
		panic(err)
	}
	defer m.Close()
	exe, err := berth.Compile(m, berth.CPU, berth.Options{})
	if err != nil {
		panic(err)
	}
	s, err := exe.NewSession()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	image, _ := berth.NewTensor("image", []int64{1, 3, 32, 32}, make([]float32, 3*32*32))
	outs, err := s.Run(context.Background(), image)
	if err != nil {
		panic(err)
	}
	fmt.Println(outs[0].Name, outs[0].DType, outs[0].Shape)
	// Output: logits float32 [1 10]
}
