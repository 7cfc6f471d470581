package onnx

import (
	"slices"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// needed marks the nodes of nps that compute the tensors named wanted,
// where the tensors ImportOptions.Values binds stand for themselves: what
// a graph specialised on computed values, or cut down to some of its
// tensors, still runs. A node is kept whole when any of its outputs is
// needed, and with it everything it reads, the names its subgraphs read
// included. cut lists the bound values whose nodes are
// left out that something needed reads: the caller makes them constants
// itself. A bound value nothing needed reads is left out altogether.
func (im *importer) needed(nps []*onnxpb.NodeProto, wanted []string) (keep []bool, cut []string) {
	var producer map[string]int
	if im.producers != nil {
		producer = im.producers()
	} else {
		producer = producersOf(nps)
	}
	keep = make([]bool, len(nps))
	seen := make(map[string]bool, len(wanted))
	stack := slices.Clone(wanted)
	for len(stack) > 0 {
		name := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		k, ok := producer[name]
		if !ok || keep[k] {
			continue
		}
		if _, bound := im.opts.Values[name]; bound {
			continue
		}
		keep[k] = true
		stack = append(stack, nps[k].GetInput()...)
		stack = appendSubgraphReads(stack, nps[k])
	}
	for name := range im.opts.Values {
		k, ok := producer[name]
		switch {
		case ok && seen[name] && !keep[k]:
			cut = append(cut, name)
		case ok && !seen[name] && !keep[k]:
			// Nothing needed reads it (a value of an earlier stage that
			// a later one's values stand for): it stays out.
			im.prebound[name] = true
		}
	}
	slices.Sort(cut)
	return keep, cut
}

// appendSubgraphReads appends every name the nodes of np's subgraphs
// read, at any depth: those they define among them too, which may only
// keep more than needed.
func appendSubgraphReads(names []string, np *onnxpb.NodeProto) []string {
	for _, a := range np.GetAttribute() {
		graphs := a.GetGraphs()
		if a.GetG() != nil {
			graphs = append(graphs, a.GetG())
		}
		for _, sub := range graphs {
			for _, n := range sub.GetNode() {
				names = append(names, n.GetInput()...)
				names = appendSubgraphReads(names, n)
			}
			for _, out := range sub.GetOutput() {
				names = append(names, out.GetName())
			}
		}
	}
	return names
}

// bindCut makes each value of cut (see needed) a constant of the value
// ImportOptions.Values gives it, before the nodes are converted.
func (im *importer) bindCut(cut []string) error {
	for _, name := range cut {
		v := im.opts.Values[name]
		t := ir.Tensor{Name: name, DType: v.DType, Shape: v.Shape.Clone()}
		c := v
		c.Name = name
		if err := bindConstant(&t, c); err != nil {
			return err
		}
		t.Producer = -1
		im.ids[name] = im.g.AddTensor(t)
		im.prebound[name] = true
	}
	return nil
}

// producersOf indexes nps by the tensors they write: the node of each
// output name.
func producersOf(nps []*onnxpb.NodeProto) map[string]int {
	producer := make(map[string]int, len(nps))
	for k, np := range nps {
		for _, out := range np.GetOutput() {
			if out != "" {
				producer[out] = k
			}
		}
	}
	return producer
}
