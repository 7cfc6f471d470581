package ir

import "fmt"

// TrainingDomain is the operator set of ONNX's optimizer operators. berth
// imports exactly the ops TrainingOp names from it: each computes one
// update step of its optimizer and runs like any other inference node.
const TrainingDomain = "ai.onnx.preview.training"

// trainingGroups maps each supported training operator to the number of
// tensor groups its inputs hold after the learning rate R and the step
// count T: Adagrad (X, G, H), Momentum (X, G, V), Adam (X, G, V, H).
var trainingGroups = map[string]int{"Adagrad": 3, "Momentum": 3, "Adam": 4}

// TrainingOp reports whether op is a supported operator of TrainingDomain.
func TrainingOp(op string) bool { _, ok := trainingGroups[op]; return ok }

// DomainOK reports whether berth knows op in the given domain: every
// default-domain op with a shape rule, the optimizers of TrainingDomain
// and berth's own operators of BerthDomain (neither of which are ops of
// the default domain).
func DomainOK(domain, op string) bool {
	switch domain {
	case TrainingDomain:
		return TrainingOp(op)
	case BerthDomain:
		return BerthOp(op)
	}
	return (domain == "" || domain == "ai.onnx") && !TrainingOp(op) && !BerthOp(op)
}

// TrainingTensors returns how many optimized tensors a training node
// updates, checking that its inputs split into whole groups.
func TrainingTensors(n *Node) (int, error) {
	k := trainingGroups[n.Op]
	if k == 0 {
		return 0, fmt.Errorf("operator %s is not a training operator", n.Op)
	}
	m := len(n.Inputs) - 2
	if m <= 0 || m%k != 0 {
		return 0, fmt.Errorf("has %d inputs; want R, T and %d groups of equally many tensors", len(n.Inputs), k)
	}
	return m / k, nil
}

func init() {
	register(inferTraining, "Adagrad", "Momentum", "Adam")
}

// inferTraining: outputs are the updated X tensors followed by each updated
// state group (Momentum's V; Adagrad's H; Adam's V then H), every one of
// its X's type.
func inferTraining(g *Graph, n *Node) ([]Type, error) {
	cnt, err := TrainingTensors(n)
	if err != nil {
		return nil, err
	}
	r, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	t, err := input(g, n, 1)
	if err != nil {
		return nil, err
	}
	if !r.DType.IsFloat() {
		return nil, fmt.Errorf("learning rate R is %s, want a float type", r.DType)
	}
	if r.Shape.Elements() != 1 {
		return nil, fmt.Errorf("learning rate R must be a scalar, has shape %v", r.Shape)
	}
	if t.DType != Int64 || t.Shape.Elements() != 1 {
		return nil, fmt.Errorf("step count T must be an int64 scalar, is %s%v", t.DType, t.Shape)
	}
	groups := trainingGroups[n.Op]
	xs := make([]*Tensor, cnt)
	for i := range cnt {
		x, err := input(g, n, 2+i)
		if err != nil {
			return nil, err
		}
		if !x.DType.IsFloat() {
			return nil, fmt.Errorf("X%d is %s, want a float type", i+1, x.DType)
		}
		for j := 1; j < groups; j++ {
			o, err := input(g, n, 2+j*cnt+i)
			if err != nil {
				return nil, err
			}
			if o.DType != x.DType || !o.Shape.Equal(x.Shape) {
				return nil, fmt.Errorf("input %q is %s%v, want %s%v like X%d", o.Name, o.DType, o.Shape, x.DType, x.Shape, i+1)
			}
		}
		xs[i] = x
	}
	out := make([]Type, 0, (groups-1)*cnt)
	for j := 0; j < groups-1; j++ {
		for _, x := range xs {
			out = append(out, Type{DType: x.DType, Shape: x.Shape.Clone()})
		}
	}
	return out, nil
}
