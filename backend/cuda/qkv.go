package cuda

import (
	"slices"

	"github.com/berth-ml/berth/ir"
)

// A transformer layer projects one activation three times, into the
// queries, keys and values its attention reads: three products of the
// same rows by three weight matrices, each too narrow (768 columns in
// BERT-base) for cuBLASLt to run at its best (11.5 µs each at batch 32,
// 420 TFLOP/s, on an H200, where the 3,072 columns of the feed-forward
// product reach 600). mergeProjections rewrites, before planning, the
// three MatMulAdd nodes (fuseEpilogues) that feed an Attend's q, k and v,
// each through a view or none, into one MatMulAdd by the three matrices
// side by side (their biases too), whose output the Attend reads three
// times, at three column offsets (its attribute offsets) and with row
// strides three times as long. The products' sums are the same sums; the
// views and the three outputs are gone.

// mergeProjections returns g with each attention's three projections
// merged as above, or g itself where there are none.
func mergeProjections(g *ir.Graph) *ir.Graph {
	cons, isOut, fused, gone := rewriteOf(g)
	h := *g // with the merged weights, biases and outputs
	h.Tensors = slices.Clone(g.Tensors)
	for i := range g.Nodes {
		a := &g.Nodes[i]
		if a.Op != "Attend" || a.Domain != cudaDomain || len(a.Inputs) != 4 || fused[i] != nil {
			continue
		}
		// only is the node that alone reads t, where t is no graph
		// output.
		only := func(t ir.TensorID) int {
			if t == ir.NoTensor || isOut[t] || len(cons[t]) != 1 {
				return -1
			}
			return cons[t][0]
		}
		var prods, views [3]int
		var cols [3]int64
		ok := true
		for j := range 3 {
			t := a.Inputs[j]
			views[j] = -1
			p := g.Tensor(t).Producer
			if p >= 0 && ir.IsView(&g.Nodes[p]) && g.Nodes[p].DefaultDomain() && only(t) == i && firstOnly(&g.Nodes[p], g.Nodes[p].Inputs[0]) {
				views[j], t = p, g.Nodes[p].Inputs[0]
				p = g.Tensor(t).Producer
			}
			reader := i
			if views[j] >= 0 {
				reader = views[j]
			}
			if p < 0 || !isMatMulAdd(&g.Nodes[p]) || hasResidual(&g.Nodes[p]) || only(t) != reader || gone[p] || fused[p] != nil {
				ok = false
				break
			}
			if views[j] < 0 && slices.Contains(a.Inputs[j+1:3], t) {
				ok = false // one tensor for two operands
				break
			}
			prods[j] = p
			cols[j] = g.Tensor(t).Shape[g.Tensor(t).Shape.Rank()-1]
		}
		if !ok || prods[0] == prods[1] || prods[1] == prods[2] || prods[0] == prods[2] {
			continue
		}
		p0 := &g.Nodes[prods[0]]
		x, w0 := p0.Inputs[0], g.Tensor(p0.Inputs[1])
		for _, p := range prods {
			n := &g.Nodes[p]
			w, b := g.Tensor(n.Inputs[1]), g.Tensor(n.Inputs[2])
			if n.Inputs[0] != x || !w.IsConst() || !b.IsConst() || w.Shape.Rank() != 2 || w.Shape[0] != w0.Shape[0] ||
				w.DType != ir.Float32 || b.DType != ir.Float32 || b.Shape.Elements() != w.Shape[1] {
				ok = false
			}
		}
		// Each operand's strides, in elements of its product's output
		// (rows of cols[j]), become strides in the merged output's rows:
		// a multiple of a row a multiple of the longer row; the others,
		// as they are, must stay within a row.
		total := cols[0] + cols[1] + cols[2]
		dims := a.Attrs.Ints("dims", nil)
		var strides [3][]int64
		for j, name := range []string{"q", "k", "v"} {
			st := slices.Clone(a.Attrs.Ints(name, nil))
			if len(st) != 4 || len(dims) != 6 {
				ok = false
				break
			}
			// (batch, head, row, value) extents: B, H, S or T, D or E.
			extent := [4]int64{dims[0], dims[1], dims[2], dims[4]}
			if j > 0 {
				extent[2] = dims[3]
			}
			if j == 2 {
				extent[3] = dims[5]
			}
			span := int64(0)
			for d, s := range st {
				if s%cols[j] == 0 {
					st[d] = s / cols[j] * total
				} else {
					span += (extent[d] - 1) * s
				}
			}
			ok = ok && span < cols[j]
			strides[j] = st
		}
		if !ok {
			continue
		}
		k := w0.Shape[0]
		w := make([]byte, 0, 4*k*total)
		for r := range k {
			for _, p := range prods {
				wt := g.Tensor(g.Nodes[p].Inputs[1])
				c := wt.Shape[1]
				w = append(w, wt.Data[4*r*c:4*(r+1)*c]...)
			}
		}
		var bias []byte
		for _, p := range prods {
			bias = append(bias, g.Tensor(g.Nodes[p].Inputs[2]).Data...)
		}
		y0 := g.Tensor(p0.Outputs[0])
		shape := y0.Shape.Clone()
		shape[shape.Rank()-1] = total
		name := g.Nodes[prods[0]].Name + "/qkv"
		wid := h.NewTensor(name+"/weights", ir.Float32, ir.Shape{k, total}, w)
		bid := h.NewTensor(name+"/bias", ir.Float32, ir.Shape{total}, bias)
		yid := h.NewTensor(name, ir.Float32, shape, nil)
		// The merged product sits where the last of the three sat: its
		// input is ready there, and the Attend comes after.
		last := slices.Max(prods[:])
		for j := range 3 {
			gone[prods[j]] = true
			if views[j] >= 0 {
				gone[views[j]] = true
			}
		}
		gone[last] = false
		fused[last] = &ir.Node{Name: name, Op: "MatMulAdd", Domain: cudaDomain, Inputs: []ir.TensorID{x, wid, bid, ir.NoTensor}, Outputs: []ir.TensorID{yid}}
		m := *a
		m.Inputs = []ir.TensorID{yid, yid, yid, a.Inputs[3]}
		m.Attrs = ir.Attrs{}
		for key, v := range a.Attrs {
			m.Attrs[key] = v
		}
		for j, name := range []string{"q", "k", "v"} {
			m.Attrs[name] = ir.Attr{Kind: ir.AttrInts, Ints: strides[j]}
		}
		m.Attrs["offsets"] = ir.Attr{Kind: ir.AttrInts, Ints: []int64{0, cols[0], cols[0] + cols[1]}}
		fused[i] = &m
	}
	if unchanged(fused, gone) {
		return g // without the tensors added to h
	}
	return rebuild(&h, fused, gone)
}
