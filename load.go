package berth

import (
	"fmt"
	"slices"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
)

// LoadOptions specialise a model while it loads. The zero value loads the
// file as it is.
type LoadOptions struct {
	// InputShapes fixes the shapes of graph inputs, by name. berth plans
	// every tensor with a static shape, so an input declared with symbolic
	// dimensions ("batch", "seq") needs its shape here; the compiled model
	// then runs that shape only (load it again for another).
	InputShapes map[string][]int64
	// Constants binds graph inputs, by name, to fixed values: each becomes
	// a constant of the model and is no longer fed to Session.Run. This
	// specialises a model whose shapes depend on the values of some
	// inputs (a Reshape's target shape, a Tile's repeats, a TopK's k fed
	// as inputs) so that it can be planned statically.
	Constants map[string]Tensor
}

// LoadWith is Load with options.
func LoadWith(path string, opts LoadOptions) (*Model, error) {
	shapes := opts.InputShapes
	if len(opts.Constants) > 0 {
		shapes = make(map[string][]int64, len(opts.InputShapes)+len(opts.Constants))
		for k, v := range opts.InputShapes {
			shapes[k] = v
		}
		for k, t := range opts.Constants {
			shapes[k] = t.Shape
		}
	}
	src, err := onnx.ImportWith(path, onnx.ImportOptions{InputShapes: shapes})
	if err != nil {
		return nil, err
	}
	if err := bindConstants(src.Graph, opts.Constants); err != nil {
		src.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := prepare(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// bindConstants turns the named graph inputs into constants.
func bindConstants(g *ir.Graph, consts map[string]Tensor) error {
	for name, c := range consts {
		k := slices.IndexFunc(g.Inputs, func(id ir.TensorID) bool { return g.Tensors[id].Name == name })
		if k < 0 {
			return fmt.Errorf("constant %q: the model has no graph input of that name", name)
		}
		t := &g.Tensors[g.Inputs[k]]
		if c.DType != t.DType || !t.Shape.Equal(c.Shape) {
			return fmt.Errorf("constant %q: the input is %s%v, the value is %s%v", name, t.DType, t.Shape, c.DType, ir.Shape(c.Shape))
		}
		if int64(len(c.Data)) != t.Bytes() {
			return fmt.Errorf("constant %q: %d bytes of data for %s%v", name, len(c.Data), t.DType, t.Shape)
		}
		// A fresh allocation is aligned to the element size; a zero-size
		// constant still needs non-nil Data.
		t.Data = append(make([]byte, 0, max(len(c.Data), 1)), c.Data...)
		g.Inputs = slices.Delete(g.Inputs, k, k+1)
	}
	return nil
}
