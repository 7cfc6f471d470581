package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// graphBuilder adds nodes with one output to an ir.Graph.
type graphBuilder struct{ g ir.Graph }

func (b *graphBuilder) input(name string, shape ...int64) ir.TensorID {
	id := b.g.NewTensor(name, ir.Float32, shape, nil)
	b.g.Inputs = append(b.g.Inputs, id)
	return id
}

func (b *graphBuilder) weight(name string, shape ...int64) ir.TensorID {
	return b.g.NewTensor(name, ir.Float32, shape, make([]byte, ir.Shape(shape).Bytes(ir.Float32)))
}

func (b *graphBuilder) node(op, name string, shape ir.Shape, ins ...ir.TensorID) ir.TensorID {
	out := b.g.AddTensor(ir.Tensor{Name: name, DType: ir.Float32, Shape: shape, Producer: len(b.g.Nodes)})
	b.g.Nodes = append(b.g.Nodes, ir.Node{Name: name, Op: op, Inputs: ins, Outputs: []ir.TensorID{out}})
	return out
}

func TestFromGraph(t *testing.T) {
	b := &graphBuilder{}
	x := b.input("x", 1, 3, 8, 8)
	w := b.weight("w", 16, 3, 3, 3)
	shape := b.g.NewTensor("shape", ir.Int64, ir.Shape{2}, make([]byte, 16))
	c := b.node("Conv", "c", ir.Shape{1, 16, 8, 8}, x, w, ir.NoTensor)
	r := b.node("Relu", "r", ir.Shape{1, 16, 8, 8}, c)
	f := b.node("Reshape", "f", ir.Shape{1, 1024}, r, shape)
	s := b.node("Squeeze", "s", ir.Shape{1024}, f)         // a view of a view
	k := b.node("Reshape", "k", ir.Shape{4}, x, shape)     // fewer bytes: not a view
	i := b.node("Identity", "i", ir.Shape{16, 3, 3, 3}, w) // of a constant: not a view
	b.g.Outputs = []ir.TensorID{s, k, i, w}

	scratch := make([]int64, len(b.g.Nodes))
	scratch[0] = 4096 // the convolution's im2col buffer
	p, index, err := plan.FromGraph(&b.g, scratch)
	if err != nil {
		t.Fatal(err)
	}

	names := func(ids []int) []string {
		var out []string
		for _, id := range ids {
			out = append(out, p.Tensors[id].Name)
		}
		return out
	}
	var all []int
	for id := range p.Tensors {
		all = append(all, id)
	}
	if got, want := names(all), []string{"x", "c", "c/scratch", "r", "f", "s", "k", "i"}; !slices.Equal(got, want) {
		t.Fatalf("tensors %v, want %v", got, want)
	}
	for _, id := range []ir.TensorID{w, shape} {
		if index[id] != -1 {
			t.Errorf("constant %q has index %d", b.g.Tensors[id].Name, index[id])
		}
	}
	if p.Tensors[index[x]].Size != 3*8*8*4 || p.Tensors[2].Size != 4096 {
		t.Errorf("sizes %+v", p.Tensors)
	}
	if got := names(p.Steps[0].Inputs); !slices.Equal(got, []string{"x"}) {
		t.Errorf("Conv reads %v, want [x]: weights and absent inputs are left out", got)
	}
	if got := names(p.Steps[0].Outputs); !slices.Equal(got, []string{"c", "c/scratch"}) {
		t.Errorf("Conv writes %v", got)
	}
	views := map[string]int{"f": index[r], "s": index[f], "k": -1, "i": -1, "r": -1}
	for name, want := range views {
		id := slices.IndexFunc(p.Tensors, func(t plan.Tensor) bool { return t.Name == name })
		if got := p.Tensors[id].Alias(); got != want {
			t.Errorf("%s: alias %d, want %d", name, got, want)
		}
	}
	if got := names(p.Inputs); !slices.Equal(got, []string{"x"}) {
		t.Errorf("inputs %v", got)
	}
	if got := names(p.Outputs); !slices.Equal(got, []string{"s", "k", "i"}) {
		t.Errorf("outputs %v", got)
	}

	pl := check(t, p, plan.Options{})
	// r lives on through its views until the end: s is a graph output.
	if rr := index[r]; pl.End[rr] != len(p.Steps)-1 || pl.Offsets[index[s]] != pl.Offsets[rr] {
		t.Errorf("r ends at %d and s is at %d, r at %d", pl.End[rr], pl.Offsets[index[s]], pl.Offsets[rr])
	}
}

func TestFromGraphRejects(t *testing.T) {
	tests := []struct {
		name    string
		build   func(b *graphBuilder)
		scratch []int64
		want    string
	}{
		{"scratch sizes", func(b *graphBuilder) { b.node("Relu", "r", ir.Shape{1}, b.input("x", 1)) }, []int64{1, 2}, "scratch sizes"},
		{"reads the undefined", func(b *graphBuilder) {
			ghost := b.g.NewTensor("ghost", ir.Float32, ir.Shape{1}, nil)
			b.node("Relu", "r", ir.Shape{1}, ghost)
		}, nil, "no earlier node writes"},
		{"output never written", func(b *graphBuilder) {
			b.g.Outputs = append(b.g.Outputs, b.g.NewTensor("ghost", ir.Float32, ir.Shape{1}, nil))
		}, nil, "never written"},
		{"written twice", func(b *graphBuilder) {
			x := b.input("x", 1)
			r := b.node("Relu", "r", ir.Shape{1}, x)
			b.g.Nodes = append(b.g.Nodes, ir.Node{Name: "again", Op: "Relu", Inputs: []ir.TensorID{x}, Outputs: []ir.TensorID{r}})
		}, nil, "already written"},
		{"input out of range", func(b *graphBuilder) { b.g.Inputs = append(b.g.Inputs, 9) }, nil, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &graphBuilder{}
			tt.build(b)
			_, _, err := plan.FromGraph(&b.g, tt.scratch)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("FromGraph = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
