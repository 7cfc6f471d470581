package plan_test

import (
	"fmt"
	"log"
	"os"

	"github.com/berth-ml/berth/plan"
)

// A three-step chain: each step reads the tensor the step before it wrote,
// so two tensors at a time are live, except that the Relu, whose kernel
// may run in place, writes its output over its input, which dies there.
func Example() {
	p := &plan.Problem{
		Tensors: []plan.Tensor{
			{Name: "x", Size: 1000},
			{Name: "h", Size: 4000},
			{Name: "a", Size: 4000},
			{Name: "y", Size: 1000},
		},
		Steps: []plan.Step{
			{Name: "fc1", Op: "MatMul", Inputs: []int{0}, Outputs: []int{1}},
			{Name: "act", Op: "Relu", InPlace: true, Inputs: []int{1}, Outputs: []int{2}},
			{Name: "fc2", Op: "MatMul", Inputs: []int{2}, Outputs: []int{3}},
		},
		Inputs:  []int{0},
		Outputs: []int{3},
	}
	pl, err := plan.Build(p, plan.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := plan.Verify(p, pl); err != nil {
		log.Fatal(err)
	}
	fmt.Println("arena", pl.ArenaBytes, "lower bound", pl.LoadBytes, "naive", pl.NaiveBytes)
	for i, t := range p.Tensors {
		fmt.Printf("%s at %d, steps %d-%d\n", t.Name, pl.Offsets[i], pl.Start[i], pl.End[i])
	}
	// Output:
	// arena 5056 lower bound 5056 naive 10112
	// x at 4032, steps 0-0
	// h at 0, steps 0-2
	// a at 0, steps 1-2
	// y at 4032, steps 2-2
}

// A report lists every tensor's berth: the steps it is in use, its offset
// and its size. Here a view shares the bytes of the tensor it reshapes.
func ExampleReport_WriteText() {
	p := &plan.Problem{
		Tensors: []plan.Tensor{
			{Name: "x", Size: 1000},
			{Name: "h", Size: 4000},
			{Name: "h2d", Size: 4000},
			{Name: "y", Size: 1000},
		},
		Steps: []plan.Step{
			{Name: "fc1", Op: "MatMul", Inputs: []int{0}, Outputs: []int{1}},
			{Name: "reshape", Op: "Reshape", Inputs: []int{1}, Outputs: []int{2}},
			{Name: "fc2", Op: "MatMul", Inputs: []int{2}, Outputs: []int{3}},
		},
		Inputs:  []int{0},
		Outputs: []int{3},
	}
	p.Tensors[2].SetAlias(1) // h2d is h, reshaped
	pl, err := plan.Build(p, plan.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := pl.Report(p).WriteText(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// arena                  5056 B  placed by size, +0.0% over the lower bound
	// lower bound            5056 B  LOAD of the file schedule
	// file order             8064 B  LOAD of the file order, nothing shared
	// naive                 10112 B  every tensor in a slot of its own
	// 3 steps, 4 tensors, alignment 64
	//
	// start  end  offset  size  op       tensor
	// 0      0    4032    1000  input    x
	// 0      2    0       4000  MatMul   h
	// 1      2    0       4000  Reshape  h2d (view of h)
	// 2      2    4032    1000  MatMul   y
}
