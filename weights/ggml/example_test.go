package ggml_test

import (
	"fmt"

	"github.com/berth-ml/berth/weights/ggml"
)

func ExampleDequantize() {
	// One Q8_0 block: the scale 0.5 as an f16 (0x3800), then 32 signed bytes.
	block := make([]byte, ggml.Q8_0.TypeSize())
	block[0], block[1] = 0x00, 0x38
	for i := range 32 {
		block[2+i] = byte(int8(i - 16))
	}
	values := make([]float32, ggml.Q8_0.BlockSize())
	if err := ggml.Dequantize(ggml.Q8_0, values, block); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(values[:4], values[31])

	size, _ := ggml.Q4_K.RowSize(4096)
	fmt.Printf("a row of 4096 %s values takes %d bytes\n", ggml.Q4_K, size)
	// Output:
	// [-8 -7.5 -7 -6.5] 7.5
	// a row of 4096 q4_K values takes 2304 bytes
}
