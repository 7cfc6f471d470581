package passes

import (
	"errors"
	"fmt"

	"github.com/berth-ml/berth/ir"
)

// An Evaluator computes node n, all of whose inputs are constants, and
// sets the Data of each of its outputs (whose DType and Shape are already
// set) to exactly Bytes() little-endian bytes. The inputs' Data are aligned
// to their element size while the Evaluator runs (Fold hands it aligned
// copies of misaligned weights), and the Evaluator must not modify them. It may decline a node by
// returning an error that wraps ErrNoFold; the node then stays in the graph
// and runs at run time.
type Evaluator func(g *ir.Graph, n *ir.Node) error

// ErrNoFold is returned (wrapped) by an Evaluator that cannot or should
// not compute a node at compile time.
var ErrNoFold = errors.New("node not folded")

// MaxFoldBytes bounds the total output size of a node that Fold evaluates
// through the Evaluator; larger results stay computed at run time rather
// than stored as constants.
const MaxFoldBytes = 16 << 20

// Prepare infers every tensor's type and shape, folds constants, merges
// sums of pointwise convolutions, removes dead code, materializes the
// graph outputs and verifies the result. eval may be nil: then only Shape
// nodes and views of constants fold.
//
// Prepare renumbers nodes and tensors. Errors name the node at fault.
func Prepare(g *ir.Graph, eval Evaluator) error {
	if err := Fold(g, eval); err != nil {
		return err
	}
	markDropped(g)
	MergePointwiseSums(g)
	EliminateDeadCode(g)
	MaterializeOutputs(g)
	if err := ir.Verify(g); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return nil
}
