package quant_test

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/berth-ml/berth/backend/cpu/quant"
	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/weights/ggml"
)

func ExampleMatMul() {
	// W: three rows of 32 values in Q8_0, row j holding j+1 times 0.5.
	const k, n = 32, 3
	w := make([]byte, n*34)
	for j := range n {
		block := w[34*j : 34*j+34]
		binary.LittleEndian.PutUint16(block, dtype.F16FromF32(0.5))
		for i := range 32 {
			block[2+i] = byte(j + 1)
		}
	}
	// x: one row of 32 values, 0.25 each.
	x := make([]float32, k)
	for i := range x {
		x[i] = 0.25
	}
	y := make([]float32, n)
	scratch := make([]byte, quant.ScratchBytes(ggml.Q8_0, 1, k))
	if err := quant.MatMul(y, x, 1, k, w, n, ggml.Q8_0, scratch); err != nil {
		fmt.Println(err)
		return
	}
	// x went through 8 bits (as Q8_0) on its way: y is close to
	// 32·0.25·0.5·(j+1), not exactly that.
	fmt.Printf("%.2f\n", y)
	// Output: [4.00 8.00 12.00]
}

func ExampleProduct_Run() {
	// A product shared among four workers, each on its rows of W.
	const m, k, n = 1, 256, 100
	w := make([]byte, n*144) // Q4_K rows of zeros
	x := make([]float32, m*k)
	y := make([]float32, m*n)
	scratch := make([]byte, quant.ScratchBytes(ggml.Q4_K, m, k))
	p, err := quant.Prepare(y, x, m, k, w, n, ggml.Q4_K, scratch)
	if err != nil {
		fmt.Println(err)
		return
	}
	var wg sync.WaitGroup
	for i := range 4 {
		lo, hi := quant.Split(n, 4, i)
		wg.Go(func() { p.Run(lo, hi) })
		fmt.Println(lo, hi)
	}
	wg.Wait()
	// Output:
	// 0 16
	// 16 48
	// 48 80
	// 80 100
}

func ExampleProduct_RunWith() {
	// A prompt's product shared among two workers, each with a work space
	// of its own, so that it may take the AMX tiles where the CPU has
	// them (WorkBytes is 0 where it does not: RunWith is then Run).
	const m, k, n, workers = 64, 256, 48, 2
	// W: Q4_0 rows whose values are 0.5 at 16 places, 0 elsewhere.
	w := make([]byte, n*18*(k/32))
	for b := range n * k / 32 {
		block := w[18*b : 18*b+18]
		binary.LittleEndian.PutUint16(block, dtype.F16FromF32(0.5))
		for i := range 16 {
			block[2+i] = 0x88 // values q−8 = 0 and 0
		}
		if b%(k/32) == 0 {
			for i := range 16 {
				block[2+i] = 0x98 // values 16 to 31 are q−8 = 1
			}
		}
	}
	x := make([]float32, m*k)
	for i := range x {
		x[i] = 1
	}
	y := make([]float32, m*n)
	scratch := make([]byte, quant.ScratchBytes(ggml.Q4_0, m, k))
	p, err := quant.Prepare(y, x, m, k, w, n, ggml.Q4_0, scratch)
	if err != nil {
		fmt.Println(err)
		return
	}
	var wg sync.WaitGroup
	for i := range workers {
		lo, hi := quant.Split(n, workers, i)
		work := make([]byte, quant.WorkBytes(ggml.Q4_0, m, k))
		wg.Go(func() { p.RunWith(lo, hi, work) })
	}
	wg.Wait()
	// Each output is 16 times 0.5, by x through 8 bits.
	fmt.Printf("%.3f %.3f\n", y[0], y[m*n-1])
	// Output: 8.000 8.000
}
