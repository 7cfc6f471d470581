package cpu

import "github.com/berth-ml/berth/plan"

// inPlaceOps are the ONNX operators whose kernels are correct when their
// first output occupies exactly the bytes of one of their inputs: each
// element of the output is computed from the elements at the same position
// of the inputs (and from values read before any output is written), and
// is written only after those are read. TestInPlaceKernels runs every one
// of them in place and out of place and compares the bytes.
var inPlaceOps = map[string]bool{
	// Unary elementwise.
	"Relu": true, "LeakyRelu": true, "Sigmoid": true, "HardSigmoid": true,
	"HardSwish": true, "Tanh": true, "Erf": true, "Exp": true, "Log": true,
	"Sqrt": true, "Neg": true, "Abs": true, "Reciprocal": true, "Clip": true,
	"Softplus": true, "Elu": true, "Selu": true, "Sin": true, "Cos": true,
	"Floor": true, "Ceil": true, "Round": true, "Sign": true,
	// Binary elementwise, with broadcasting.
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true,
	"Max": true, "Min": true, "Where": true,
	// Normalising: each row or channel is read whole before it is written.
	"Softmax": true, "LogSoftmax": true, "LayerNormalization": true,
	"BatchNormalization": true,
}

// markInPlace marks the steps of p whose kernels may run in place
// (plan.Step.InPlace).
func markInPlace(p *plan.Problem) {
	for i := range p.Steps {
		st := &p.Steps[i]
		st.InPlace = inPlaceOps[st.Op] && (st.Domain == "" || st.Domain == "ai.onnx")
	}
}
