package cuda

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// A decoding step is bound by its launches more than by its arithmetic:
// its matrix-vector products (PackedMatMul of one activation row) and the
// nodes around them are many, small and short. Before planning, Compile
// rewrites some of them in a copy of the graph (fuseProducts) into nodes
// of this backend's own, so that the plan, which every check of the arena
// rests on, sees what runs:
//
//   - a product whose only reader is an Add of a tensor of its shape (the
//     residual after the attention's and the feed-forward's output
//     projections) adds that tensor as it writes its rows;
//   - products of one activation row by several weights of one format
//     and row length (the query, key and value projections; the gate and
//     up projections) run as one launch, each block taking rows of one
//     of them;
//   - a gated unit silu(gate)·up (a Sigmoid and two Muls) over the gate
//     and up projections of one row runs in their launch, each warp
//     taking the same rows of both (the glu form of gemv.go);
//   - an RMSNorm read by nothing but such a launch is computed by it,
//     each block of the grid for itself (the norm form);
//   - the rotary embeddings of the queries and of the keys, one node
//     after the other with the same angles, run as one launch, and so do
//     the writes of the turned keys and of the values into their caches
//     (CacheWrite) where nothing else reads the caches before;
//   - where those rotations turn adjacent pairs and their queries, keys
//     and values come from one Products launch read by nothing else, that
//     launch turns and writes them itself (rope, ropeIntoProducts).
//
// The products are Products nodes of domain cudaDomain: inputs x, the
// addend (or none), one to maxProducts weights and, under norm, the
// RMSNorm's weight; outputs one per weight, or under glu one for the
// pair; the attributes format and rows (one count a weight) as
// PackedMatMul's, and "norm" (the RMSNorm's epsilon) and "glu" (1)
// where they fold those. The rotations are a Rotaries node: inputs cos,
// sin and the two tensors, outputs the two turned; with the cache writes
// its inputs go on with the key cache, the value cache, the values and
// the position, and its outputs with the two caches, updated in place
// (stateUpdates). Sums are the ones PackedMatMul computes, the Add is the
// same single float addition and the rotations the same arithmetic, so
// these results are the same bits; a folded norm sums its squares in
// another order than rms_norm, so its results, and the 8-bit x quantised
// from them, agree to rounding.

// cudaDomain is the operator set of nodes this backend makes for itself.
const cudaDomain = "berth.cuda"

// maxProducts is the most weights one Products launch takes.
const maxProducts = 3

// fuseProducts returns g with its one-row products fused as above, or g
// itself where there are none. Tensor ids stay as they are; the tensors a
// fused Add wrote are written by the product, and those a product would
// have written before its Add is folded are left without a producer.
func fuseProducts(g *ir.Graph) *ir.Graph {
	cons, isOut, fused, gone := rewriteOf(g)
	// single reports whether node i is a product of one activation row.
	single := func(i int) bool {
		n := &g.Nodes[i]
		if n.Op != "PackedMatMul" || n.Domain != ir.BerthDomain || len(n.Inputs) != 2 || len(n.Outputs) != 1 {
			return false
		}
		x := g.InputOf(n, 0)
		return x != nil && x.DType == ir.Float32 && x.Shape.Rank() > 0 && x.Shape.Elements() == x.Shape[x.Shape.Rank()-1]
	}
	// Residual Adds.
	for i := range g.Nodes {
		if !single(i) {
			continue
		}
		n := &g.Nodes[i]
		y := n.Outputs[0]
		if isOut[y] || len(cons[y]) != 1 {
			continue
		}
		a := &g.Nodes[cons[y][0]]
		if fused[cons[y][0]] != nil || a.Op != "Add" || !a.DefaultDomain() || len(a.Inputs) != 2 || len(a.Outputs) != 1 || a.Inputs[0] == a.Inputs[1] {
			continue
		}
		r := a.Inputs[0]
		if r == y {
			r = a.Inputs[1]
		}
		rt, yt, zt := g.Tensor(r), g.Tensor(y), g.Tensor(a.Outputs[0])
		if rt.DType != ir.Float32 || !rt.Shape.Equal(yt.Shape) || !zt.Shape.Equal(yt.Shape) || zt.DType != ir.Float32 {
			continue
		}
		// At the Add's place, where the addend is ready too.
		fused[cons[y][0]] = &ir.Node{Name: n.Name, Op: "Products", Domain: cudaDomain, Attrs: productAttrs(n),
			Inputs: []ir.TensorID{n.Inputs[0], r, n.Inputs[1]}, Outputs: []ir.TensorID{a.Outputs[0]}}
		gone[i] = true
	}
	// Gated units: silu(gate)·up over two products of one row.
	for i := range g.Nodes {
		if gone[i] || fused[i] != nil {
			continue
		}
		p, members := gatedUnit(g, cons, isOut, i, single)
		if p == nil || slices.ContainsFunc(members, func(j int) bool { return gone[j] || fused[j] != nil }) {
			continue
		}
		fused[i] = p
		for _, j := range members {
			gone[j] = true
		}
	}
	// Products of one row by several weights.
	for i := range g.Nodes {
		if !single(i) || gone[i] {
			continue
		}
		n := &g.Nodes[i]
		group := []int{i}
		for j := i + 1; j < len(g.Nodes) && len(group) < maxProducts; j++ {
			m := &g.Nodes[j]
			if single(j) && !gone[j] && m.Inputs[0] == n.Inputs[0] && m.Attrs.String("format", "") == n.Attrs.String("format", "") {
				group = append(group, j)
			}
		}
		if len(group) < 2 {
			continue
		}
		p := &ir.Node{Name: n.Name, Op: "Products", Domain: cudaDomain, Inputs: []ir.TensorID{n.Inputs[0], ir.NoTensor}}
		var members []*ir.Node
		for _, j := range group {
			m := &g.Nodes[j]
			members = append(members, m)
			p.Inputs = append(p.Inputs, m.Inputs[1])
			p.Outputs = append(p.Outputs, m.Outputs[0])
			gone[j] = true
		}
		p.Attrs = productAttrs(members...)
		gone[i], fused[i] = false, p
	}
	// An RMSNorm whose only readers are the weights of one Products node
	// is computed by that node's kernel.
	for i := range g.Nodes {
		p := fused[i]
		if p == nil || p.Op != "Products" || p.Inputs[1] != ir.NoTensor {
			continue
		}
		x := p.Inputs[0]
		weights := len(p.Inputs) - 2
		r := g.Tensor(x).Producer
		if r < 0 || isOut[x] || len(cons[x]) != weights || gone[r] || fused[r] != nil {
			continue
		}
		rn := &g.Nodes[r]
		if rn.Op != "RMSNorm" || rn.Domain != ir.BerthDomain || len(rn.Inputs) != 2 || len(rn.Outputs) != 1 {
			continue
		}
		if gw := g.InputOf(rn, 1); gw == nil || gw.DType != ir.Float32 || gw.Shape.Elements() != g.Tensor(x).Shape.Elements() {
			continue
		}
		form := gemvForm{norm: true, glu: p.Attrs.Int("glu", 0) != 0}
		if !gemvTakes(g, p, form) {
			continue
		}
		p.Inputs = append([]ir.TensorID{rn.Inputs[0]}, p.Inputs[1:]...)
		p.Inputs = append(p.Inputs, rn.Inputs[1])
		p.Attrs["norm"] = ir.Attr{Kind: ir.AttrFloat, Float: rn.Attrs.Float("epsilon", 1e-5)}
		gone[r] = true
	}
	// Rotary embeddings of one position's queries and keys, side by side,
	// and the writes of the keys and values into their caches.
	for i := range g.Nodes {
		j := i + 1
		if gone[i] || fused[i] != nil || j >= len(g.Nodes) || !pairedRotary(g, &g.Nodes[i], &g.Nodes[j]) {
			continue
		}
		a, b := &g.Nodes[i], &g.Nodes[j]
		r := &ir.Node{Name: a.Name, Op: "Rotaries", Domain: cudaDomain, Attrs: a.Attrs,
			Inputs: []ir.TensorID{a.Inputs[1], a.Inputs[2], a.Inputs[0], b.Inputs[0]}, Outputs: []ir.TensorID{a.Outputs[0], b.Outputs[0]}}
		if kw, vw := cacheWritesAfter(g, cons, isOut, i, b.Outputs[0]); kw >= 0 {
			k, v := &g.Nodes[kw], &g.Nodes[vw]
			r.Inputs = append(r.Inputs, k.Inputs[0], v.Inputs[0], v.Inputs[1], k.Inputs[2])
			r.Outputs = append(r.Outputs, k.Outputs[0], v.Outputs[0])
			gone[kw], gone[vw] = true, true
		}
		fused[i] = r
		gone[j] = true
	}
	if ropeProductsOn {
		ropeIntoProducts(g, cons, isOut, fused, gone)
	}
	return rebuilt(g, fused, gone)
}

// ropeProductsOn is whether fuseProducts folds a step's rotations and
// cache writes into its query, key and value products
// (BERTH_CUDA_ROPE=0: never).
var ropeProductsOn = os.Getenv("BERTH_CUDA_ROPE") != "0"

// ropeIntoProducts folds each Rotaries node that writes the caches
// (adjacent pairs) into the Products node of the queries, keys and values
// it turns and writes, where that node (no addend, no glu) is read by
// nothing else, the queries and keys through views of their own: the
// Products node, under rope, takes the Rotaries node's place, writes its
// turned queries and keys, its values, and the caches.
func ropeIntoProducts(g *ir.Graph, cons [][]int, isOut []bool, fused []*ir.Node, gone []bool) {
	// viewOf returns the product output t is a view of and the view's
	// node, where t is read by node reader alone and its view's input by
	// the view alone; -1 otherwise.
	viewOf := func(t ir.TensorID, reader int) (ir.TensorID, int) {
		v := g.Tensor(t).Producer
		if v < 0 || gone[v] || fused[v] != nil || !ir.IsView(&g.Nodes[v]) || isOut[t] || !slices.Equal(cons[t], []int{reader}) {
			return ir.NoTensor, -1
		}
		u := g.Nodes[v].Inputs[0]
		if isOut[u] || !slices.Equal(cons[u], []int{v}) {
			return ir.NoTensor, -1
		}
		return u, v
	}
	for i, r := range fused {
		if r == nil || r.Op != "Rotaries" || len(r.Inputs) != 8 || len(r.Outputs) != 4 || r.Attrs.Int("halves", 0) != 0 {
			continue
		}
		uq, vq := viewOf(r.Inputs[2], i)
		uk, vk := viewOf(r.Inputs[3], i+1)
		v := r.Inputs[6]
		if vq < 0 || vk < 0 || isOut[v] || len(cons[v]) != 1 || !gone[cons[v][0]] {
			continue
		}
		// The Products node writing them, wherever the products it
		// fused stood before the rotations.
		pi := slices.IndexFunc(fused[:i], func(n *ir.Node) bool {
			return n != nil && n.Op == "Products" && n.Domain == cudaDomain && slices.Equal(n.Outputs, []ir.TensorID{uq, uk, v})
		})
		if pi < 0 || gone[pi] {
			continue
		}
		p := fused[pi]
		if p.Inputs[1] != ir.NoTensor || p.Attrs.Int("glu", 0) != 0 {
			continue
		}
		form := gemvForm{norm: p.Attrs.Has("norm"), rope: true}
		if !gemvTakes(g, p, form) {
			continue
		}
		if _, _, err := ropeShapes(g.Tensor(r.Inputs[0]), g.Tensor(r.Inputs[1]), g.Tensor(r.Inputs[4]), g.Tensor(r.Inputs[5]), g.Tensor(r.Inputs[7]),
			g.Tensor(r.Outputs[2]), g.Tensor(r.Outputs[3]), p.Attrs.Ints("rows", nil)); err != nil {
			continue
		}
		q := *p
		q.Attrs = maps.Clone(p.Attrs)
		q.Attrs["rope"] = ir.Attr{Kind: ir.AttrInt, Int: 1}
		q.Inputs = append(slices.Clone(p.Inputs), r.Inputs[0], r.Inputs[1], r.Inputs[4], r.Inputs[5], r.Inputs[7])
		q.Outputs = []ir.TensorID{r.Outputs[0], r.Outputs[1], v, r.Outputs[2], r.Outputs[3]}
		fused[i], fused[pi] = &q, nil
		gone[pi], gone[vq], gone[vk] = true, true, true
	}
}

// gatedUnit returns the Products node (glu) that replaces node i where i
// is the Mul that ends a gated unit silu(gate)·up whose gate and up are
// products of one row by weights of one format and row count over the
// same x (by single), the Sigmoid and the Mul between them read by
// nothing else and gemv taking the pair, and members, the nodes it
// replaces besides i; else nil.
func gatedUnit(g *ir.Graph, cons [][]int, isOut []bool, i int, single func(int) bool) (p *ir.Node, members []int) {
	mul := func(n *ir.Node) bool {
		return n.Op == "Mul" && n.DefaultDomain() && len(n.Inputs) == 2 && len(n.Outputs) == 1
	}
	// only reports whether t is read by node j alone, and is no output.
	only := func(t ir.TensorID, j ...int) bool {
		return !isOut[t] && slices.Equal(cons[t], j)
	}
	m2 := &g.Nodes[i]
	if !mul(m2) {
		return nil, nil
	}
	for side := range 2 {
		m1i, upi := g.Tensor(m2.Inputs[side]).Producer, g.Tensor(m2.Inputs[1-side]).Producer
		if m1i < 0 || upi < 0 || !mul(&g.Nodes[m1i]) || !single(upi) || !only(m2.Inputs[side], i) || !only(m2.Inputs[1-side], i) {
			continue
		}
		m1 := &g.Nodes[m1i]
		for s := range 2 {
			si, gti := g.Tensor(m1.Inputs[s]).Producer, g.Tensor(m1.Inputs[1-s]).Producer
			if si < 0 || gti < 0 || !single(gti) {
				continue
			}
			sg := &g.Nodes[si]
			gate := m1.Inputs[1-s]
			if sg.Op != "Sigmoid" || !sg.DefaultDomain() || len(sg.Inputs) != 1 || sg.Inputs[0] != gate || !only(m1.Inputs[s], m1i) {
				continue
			}
			if cs := slices.Sorted(slices.Values(cons[gate])); isOut[gate] || !slices.Equal(cs, sortedPair(si, m1i)) {
				continue
			}
			a, b := &g.Nodes[gti], &g.Nodes[upi]
			if a.Inputs[0] != b.Inputs[0] || a.Attrs.String("format", "") != b.Attrs.String("format", "") || a.Attrs.Int("rows", -1) != b.Attrs.Int("rows", -2) {
				continue
			}
			p := &ir.Node{Name: a.Name, Op: "Products", Domain: cudaDomain, Attrs: productAttrs(a, b),
				Inputs: []ir.TensorID{a.Inputs[0], ir.NoTensor, a.Inputs[1], b.Inputs[1]}, Outputs: []ir.TensorID{m2.Outputs[0]}}
			if !gemvTakes(g, p, gemvForm{glu: true}) {
				continue
			}
			p.Attrs["glu"] = ir.Attr{Kind: ir.AttrInt, Int: 1}
			return p, []int{gti, upi, si, m1i}
		}
	}
	return nil, nil
}

func sortedPair(a, b int) []int { return []int{min(a, b), max(a, b)} }

// gemvTakes reports whether a gemv kernel of form f takes the Products
// node p (before its norm is folded in): its format and row length, and
// constant weights.
func gemvTakes(g *ir.Graph, p *ir.Node, f gemvForm) bool {
	t, err := ggml.ParseType(p.Attrs.String("format", ""))
	x := g.Tensor(p.Inputs[0])
	if err != nil || x.Shape.Rank() == 0 {
		return false
	}
	k := x.Shape[x.Shape.Rank()-1]
	if _, _, ok := gemvKernel(t, k, f); !ok || !gemvFits(x, k) {
		return false
	}
	for _, w := range p.Inputs[2:] {
		if !g.Tensor(w).IsConst() {
			return false
		}
	}
	return true
}

// productAttrs are the attributes of a Products node made from the
// PackedMatMuls nodes, all of one format: that format and their row
// counts, in order.
func productAttrs(nodes ...*ir.Node) ir.Attrs {
	rows := make([]int64, len(nodes))
	for i, n := range nodes {
		rows[i] = n.Attrs.Int("rows", -1)
	}
	return ir.Attrs{
		"format": nodes[0].Attrs["format"],
		"rows":   {Kind: ir.AttrInts, Ints: rows},
	}
}

// buildProducts launches a Products node: pmvs, a block of rows of one
// weight a block, or a gemv kernel, which the norm and glu forms need.
func buildProducts(c *buildContext) error {
	n := c.n
	form := gemvForm{norm: n.Attrs.Has("norm"), eps: n.Attrs.Float("norm", 0), glu: n.Attrs.Int("glu", 0) != 0, rope: n.Attrs.Int("rope", 0) != 0}
	weights, extra := len(n.Outputs), 0
	switch {
	case form.glu:
		weights = 2
	case form.rope:
		weights, extra = 3, 5
	}
	if form.norm {
		extra++
	}
	if len(n.Inputs) != 2+weights+extra || weights > maxProducts || form.glu && len(n.Outputs) != 1 || form.rope && (len(n.Outputs) != 5 || form.glu) {
		return c.errorf("%d inputs and %d outputs, want x, an addend, up to %d weights (two under glu, with one output), one output each, the norm's weight under norm, and under rope the angles, the caches and the position, with the caches as outputs", len(n.Inputs), len(n.Outputs), maxProducts)
	}
	rows := n.Attrs.Ints("rows", nil)
	x := c.in(0)
	if x == nil || x.DType != ir.Float32 || x.Shape.Rank() == 0 || len(rows) != weights {
		return c.errorf("want a float32 row and a row count for each weight")
	}
	k := x.Shape[x.Shape.Rank()-1]
	if x.Shape.Elements() != k {
		return c.errorf("input %s%v is not one row", x.DType, x.Shape)
	}
	if g := c.in(2 + weights); form.norm && (g == nil || g.DType != ir.Float32 || g.Shape.Elements() != k) {
		return c.errorf("the norm's weight is not float32 of %d values", k)
	}
	ws, ys, ns := []arg{null(), null(), null()}, []arg{null(), null(), null()}, []arg{i64(0), i64(0), i64(0)}
	var name string
	var format ggml.Type
	var rb, blocks int64
	for i := range weights {
		one := &ir.Node{Name: n.Name, Op: "PackedMatMul", Attrs: ir.Attrs{"format": n.Attrs["format"], "rows": {Kind: ir.AttrInt, Int: rows[i]}}}
		p, err := ir.PackedWeights(one, c.in(2+i), k)
		if err != nil {
			return c.errorf("weight %d: %v", i, err)
		}
		unit, _, ok := packedUnit(p.Format, k)
		if !ok || k%p.Format.BlockSize() != 0 {
			return c.errorf("no product with %s weights of rows of %d on the GPU", p.Format, k)
		}
		if i < len(n.Outputs) {
			if y := c.out(i); y == nil || y.DType != ir.Float32 || y.Shape.Elements() != p.Rows {
				return c.errorf("output %d is not float32 of %d values", i, p.Rows)
			}
			ys[i] = c.outArg(i)
		}
		if add := c.in(1); i == 0 && add != nil && (add.DType != ir.Float32 || add.Shape.Elements() != p.Rows) {
			return c.errorf("the addend %s%v is not float32 of %d values", add.DType, add.Shape, p.Rows)
		}
		name, rb, format = unit, p.RowBytes, p.Format
		ws[i], ns[i] = c.inArg(2+i), i64(p.Rows)
		blocks += (p.Rows + packedRows - 1) / packedRows
	}
	if blocks == 0 {
		return nil
	}
	ins := make([]int, weights)
	for i := range ins {
		ins[i] = 2 + i
	}
	g := null()
	if form.norm {
		g = c.inArg(2 + weights)
	}
	if form.rope {
		rope, err := ropeArgs(c, 2+weights+extra-5, rows)
		if err != nil {
			return err
		}
		if !gemvFits(x, k) || !gemvLaunch(c, format, k, rb, form, c.inArg(0), c.optIn(1), g, ins, ys[:weights], rows, rope...) {
			return c.errorf("no gemv kernel for %s rows of %d under rope", format, k)
		}
		return nil
	}
	if gemvFits(x, k) && gemvLaunch(c, format, k, rb, form, c.inArg(0), c.optIn(1), g, ins, ys[:len(n.Outputs)], rows) {
		return nil
	}
	if form.norm || form.glu {
		return c.errorf("no gemv kernel for %s rows of %d with norm %v, glu %v", format, k, form.norm, form.glu)
	}
	args := append([]arg{c.inArg(0), c.optIn(1)}, ws...)
	args = append(append(append(args, ys...), ns...), i64(k), i64(rb))
	c.launches = append(c.launches, launch{node: c.node, module: packedModule, kernel: "pmvs_" + name,
		grid: [3]uint32{uint32(blocks), 1, 1}, block: [3]uint32{32 * packedWarps, 1, 1}, args: args})
	return nil
}

// ropeArgs checks a Products node's rope inputs from index at (cos and
// sin of one position, the key and value caches, the position) and its
// outputs 3 and 4 (the caches, updated in place), for weights of rows
// rows (queries, keys, values), and returns gemv's rope arguments.
func ropeArgs(c *buildContext, at int, rows []int64) ([]arg, error) {
	half, crows, err := ropeShapes(c.in(at), c.in(at+1), c.in(at+2), c.in(at+3), c.in(at+4), c.out(3), c.out(4), rows)
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	return []arg{c.inArg(at), c.inArg(at + 1), c.outArg(3), c.outArg(4), c.inArg(at + 4), i64(crows), i64(half)}, nil
}

// ropeShapes checks the tensors of the rope form for weights of rows
// rows (queries, keys, values): cos and sin of one position (half values
// each, whole heads of the queries and keys), the key and value caches
// (crows rows of the keys' and the values' widths) and their new values
// (nil: not checked), and the position.
func ropeShapes(cs, sn, kc, vc, pos, kcOut, vcOut *ir.Tensor, rows []int64) (half, crows int64, err error) {
	if len(rows) != 3 {
		return 0, 0, fmt.Errorf("%d weights, want 3", len(rows))
	}
	if cs == nil || sn == nil || cs.DType != ir.Float32 || sn.DType != ir.Float32 || cs.Shape.Elements() != sn.Shape.Elements() {
		return 0, 0, fmt.Errorf("the rotation's angles are not float32 of one size")
	}
	half = cs.Shape.Elements()
	if half <= 0 || rows[0]%(2*half) != 0 || rows[1]%(2*half) != 0 {
		return 0, 0, fmt.Errorf("%d angles do not make heads of the %d queries and %d keys", half, rows[0], rows[1])
	}
	if pos == nil || pos.DType != ir.Int64 || pos.Shape.Elements() != 1 {
		return 0, 0, fmt.Errorf("the position is not one int64")
	}
	for i, cache := range []*ir.Tensor{kc, vc} {
		if cache == nil || cache.DType != ir.Float32 || cache.Shape.Rank() != 2 || cache.Shape[1] != rows[1+i] || i > 0 && cache.Shape[0] != crows {
			return 0, 0, fmt.Errorf("cache %d is not float32 rows of %d values, as many as the other's", i, rows[1+i])
		}
		if y := []*ir.Tensor{kcOut, vcOut}[i]; y != nil && (!y.Shape.Equal(cache.Shape) || y.DType != ir.Float32) {
			return 0, 0, fmt.Errorf("output %d is not cache %d's new value", 3+i, i)
		}
		crows = cache.Shape[0]
	}
	return half, crows, nil
}

// pairedRotary reports whether the Rotary nodes a and b, one after the
// other, turn two tensors by the same angles the same way (a step's
// queries and keys), b's input not being a's output.
func pairedRotary(g *ir.Graph, a, b *ir.Node) bool {
	for _, n := range []*ir.Node{a, b} {
		if n.Op != "Rotary" || n.Domain != ir.BerthDomain || len(n.Inputs) != 3 || len(n.Outputs) != 1 {
			return false
		}
		if _, _, _, err := ir.RotaryShape(g, n); err != nil {
			return false
		}
	}
	return a.Inputs[1] == b.Inputs[1] && a.Inputs[2] == b.Inputs[2] && b.Inputs[0] != a.Outputs[0] &&
		a.Attrs.Int("halves", 0) == b.Attrs.Int("halves", 0) &&
		g.Tensor(a.Inputs[0]).Shape[2] == g.Tensor(b.Inputs[0]).Shape[2]
}

// cacheWritesAfter finds the writes into their caches of the keys y,
// which a Rotaries node at node i turns, and of the values, for the node
// to make as well: a CacheWrite of y (through views read by nothing else)
// and, after it, a CacheWrite of values made before node i at the same
// position, each cache read by its write alone, neither y nor its views a
// graph output. It returns the two writes' nodes, or -1s.
func cacheWritesAfter(g *ir.Graph, cons [][]int, isOut []bool, i int, y ir.TensorID) (keys, values int) {
	// sole returns the one node that reads id, or -1.
	sole := func(id ir.TensorID) int {
		if isOut[id] || len(cons[id]) != 1 {
			return -1
		}
		return cons[id][0]
	}
	isWrite := func(k int, x ir.TensorID) bool {
		n := &g.Nodes[k]
		if n.Op != "CacheWrite" || n.Domain != ir.BerthDomain || len(n.Inputs) != 3 || len(n.Outputs) != 1 ||
			n.Inputs[1] != x || sole(n.Inputs[0]) != k || g.Tensor(n.Inputs[0]).IsConst() {
			return false
		}
		t, _, w, err := ir.CacheWriteShape(g, n)
		return err == nil && t*w == g.Tensor(x).Shape.Elements()
	}
	x := y
	k := sole(x)
	for k >= 0 && ir.IsView(&g.Nodes[k]) && g.Nodes[k].Input(0) == x {
		x = g.Nodes[k].Outputs[0]
		k = sole(x)
	}
	if k < 0 || !isWrite(k, x) {
		return -1, -1
	}
	for v := k + 1; v < len(g.Nodes); v++ {
		n := &g.Nodes[v]
		if n.Op != "CacheWrite" || len(n.Inputs) != 3 || n.Inputs[2] != g.Nodes[k].Inputs[2] || n.Inputs[0] == g.Nodes[k].Inputs[0] {
			continue
		}
		if p := g.Tensor(n.Inputs[1]).Producer; p < i && isWrite(v, n.Inputs[1]) {
			return k, v
		}
	}
	return -1, -1
}

// stateUpdates lists, for a node of this backend's own, the outputs it
// writes over inputs in place as CacheWrite does (by index into its
// outputs and inputs): a Rotaries node that writes the caches updates
// them, and so does a Products node under rope.
func stateUpdates(n *ir.Node) [][2]int {
	if n.Op == "Rotaries" && n.Domain == cudaDomain && len(n.Inputs) == 8 && len(n.Outputs) == 4 {
		return [][2]int{{4, 2}, {5, 3}}
	}
	if n.Op == "Products" && n.Domain == cudaDomain && n.Attrs.Int("rope", 0) != 0 && len(n.Inputs) >= 5 && len(n.Outputs) == 5 {
		l := len(n.Inputs)
		return [][2]int{{l - 3, 3}, {l - 2, 4}}
	}
	return nil
}

// buildRotaries launches a Rotaries node (inputs cos, sin, x0, x1;
// outputs y0, y1): one rotary kernel over both. Where it also writes the
// caches (inputs the key cache, the value cache, the values and the
// position; outputs the two caches, updated in place), the same launch
// writes the turned keys and the values into them.
func buildRotaries(c *buildContext) error {
	n := c.n
	if !(len(n.Inputs) == 4 && len(n.Outputs) == 2 || len(n.Inputs) == 8 && len(n.Outputs) == 4) {
		return c.errorf("%d inputs and %d outputs, want cos, sin and two tensors to turn", len(n.Inputs), len(n.Outputs))
	}
	var count, heads [2]int64
	var d int64
	for k := range 2 {
		one := &ir.Node{Name: n.Name, Op: "Rotary", Attrs: n.Attrs, Inputs: []ir.TensorID{n.Inputs[2+k], n.Inputs[0], n.Inputs[1]}, Outputs: n.Outputs[k : k+1]}
		t, h, dk, err := ir.RotaryShape(c.g, one)
		if err != nil {
			return c.errorf("tensor %d: %v", k, err)
		}
		if y := c.out(k); y == nil || !y.Shape.Equal(c.in(2+k).Shape) || y.DType != ir.Float32 {
			return c.errorf("output %d is not float32 of its input's shape", k)
		}
		if k == 1 && (dk != d || t != count[0]/(heads[0]*d/2)) {
			return c.errorf("the two tensors differ in positions or head size")
		}
		count[k], heads[k], d = t*h*(dk/2), h, dk
	}
	args := []arg{c.inArg(2), c.inArg(3), c.inArg(0), c.inArg(1), c.outArg(0), c.outArg(1),
		i64(count[0]), i64(count[1]), i64(heads[0]), i64(heads[1]), i64(d / 2), i32(int32(n.Attrs.Int("halves", 0)))}
	if len(n.Inputs) == 4 {
		c.elementwise(packedModule, "rotary2", count[0]+count[1], args...)
		return nil
	}
	// The writes, as the CacheWrite nodes they were: the keys are the
	// turned x1, whose bytes they share.
	if p := c.in(7); p.DType != ir.Int64 || p.Shape.Elements() != 1 {
		return c.errorf("position %s%v, want one int64", p.DType, p.Shape)
	}
	var ts, cs, ws [2]int64
	for k, x := range []*ir.Tensor{c.out(1), c.in(6)} {
		cache := c.in(4 + k)
		if cache.DType != ir.Float32 || cache.Shape.Rank() != 2 || x.DType != ir.Float32 {
			return c.errorf("cache %s%v and rows %s%v, want float32 matrices", cache.DType, cache.Shape, x.DType, x.Shape)
		}
		rows, width := cache.Shape[0], cache.Shape[1]
		n := x.Shape.Elements()
		if width <= 0 || n%width != 0 || n/width > rows {
			return c.errorf("rows %v do not fit a cache %v", x.Shape, cache.Shape)
		}
		if y := c.out(2 + k); y == nil || !y.Shape.Equal(cache.Shape) || y.DType != ir.Float32 {
			return c.errorf("output %d is not the cache's new value", 2+k)
		}
		ts[k], cs[k], ws[k] = n/width, rows, width
	}
	args = append(args, c.outArg(2), c.outArg(3), c.inArg(6), c.inArg(7), i64(ts[0]), i64(cs[0]), i64(ws[0]), i64(ts[1]), i64(cs[1]), i64(ws[1]))
	before := len(c.launches)
	c.elementwise(packedModule, "rotary2_cache", count[0]+count[1]+ts[1]*ws[1], args...)
	if len(c.launches) > before {
		c.launches[before].early = earlyAttention
	}
	return nil
}
