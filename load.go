package berth

import (
	"fmt"

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
	// SequenceLengths fixes the length of sequence-typed graph inputs, by
	// name. A sequence input x of length k is fed as k tensors named
	// x[0] … x[k-1] (their shapes, when the model leaves them open, go in
	// InputShapes under those names); a sequence output y comes back as
	// tensors y[0], y[1], … in order. berth resolves sequences statically:
	// each must have a length and element positions the graph fixes.
	SequenceLengths map[string]int
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
	var consts map[string]ir.Tensor
	if len(opts.Constants) > 0 {
		consts = make(map[string]ir.Tensor, len(opts.Constants))
		for k, t := range opts.Constants {
			consts[k] = ir.Tensor{Name: k, DType: t.DType, Shape: ir.Shape(t.Shape), Data: t.Data}
		}
	}
	src, err := onnx.ImportWith(path, onnx.ImportOptions{InputShapes: shapes, Constants: consts, SequenceLengths: opts.SequenceLengths})
	if err != nil {
		return nil, err
	}
	m, err := prepare(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
