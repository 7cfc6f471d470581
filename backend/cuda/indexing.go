package cuda

import (
	"fmt"
	"math"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// Builders of the gathers through index tables (Pad, Resize, GatherND) and
// of TopK. The tables come from the rules the backends share (ir.PadMaps,
// ir.ResizeTaps): the CUDA kernels read the same input elements with the
// same weights as the CPU backend.

// indexMap adds an index-map gather from the node's input 0 to its output
// 0: along axis d, output index q reads input index maps[d][q], or the
// constant where that is −1 (value: a tensor of one element, or the bits
// of one of the input's type). Axes that copy the input as they are (an
// unpadded channel axis) take no table, and neighbours of that kind merge.
func (c *buildContext) indexMap(maps [][]int32, value arg, bits uint64) error {
	x, y := c.in(0), c.out(0)
	size := x.DType.Size()
	switch size {
	case 1, 2, 4, 8:
	default:
		return c.unsupported(x.DType)
	}
	n := y.Shape.Elements()
	if n == 0 {
		return nil
	}
	xs := x.Shape.Strides()
	var dims, st, off []int64
	var table []int32
	identity := false // the last axis kept copies its input as it is
	for d, m := range maps {
		id := int64(len(m)) == x.Shape[d]
		for q, v := range m {
			id = id && int64(v) == int64(q)
		}
		switch {
		case len(m) == 1 && m[0] == 0:
			// A size-1 axis reading index 0: nothing to walk, but the
			// axes around it merge only if it has one element in x too.
			identity = identity && x.Shape[d] == 1
			continue
		case id && identity:
			dims[len(dims)-1] *= int64(len(m))
			st[len(st)-1] = xs[d]
			continue
		case id:
			off = append(off, -1)
		default:
			off = append(off, int64(len(table)))
			table = append(table, m...)
		}
		identity = id
		dims, st = append(dims, int64(len(m))), append(st, xs[d])
	}
	if len(dims) > maxRank {
		return c.errorf("an index map of rank %d (after merging axes) is more than the CUDA kernels' %d", len(dims), maxRank)
	}
	p := make([]uint64, 2+3*maxRank)
	p[0], p[1] = uint64(len(dims)), uint64(n)
	for d := range dims {
		p[2+d], p[2+maxRank+d], p[2+2*maxRank+d] = uint64(dims[d]), uint64(st[d]), uint64(off[d])
	}
	maps32 := null()
	if len(table) > 0 {
		maps32 = c.extra(raw.Bytes(table))
	}
	c.elementwise(index, fmt.Sprintf("imap_%d", size), n, c.inArg(0), c.outArg(0), maps32, value, arg{words: []uint64{bits}}, words(p))
	return nil
}

// valueErr wraps err, naming the node; a want of a value stays one.
func (c *buildContext) valueErr(err error) error {
	return fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, err)
}

func buildPad(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != y.DType || x.Shape.Rank() != y.Shape.Rank() {
		return c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	maps, err := ir.PadMaps(c.g, c.n)
	if err != nil {
		return c.valueErr(err)
	}
	for d, m := range maps {
		if int64(len(m)) != y.Shape[d] {
			return c.errorf("output %v, the pads give %d along axis %d", y.Shape, len(m), d)
		}
	}
	value, bits := null(), uint64(0)
	if t := c.in(2); t != nil && t.Shape.Elements() > 0 {
		if t.DType != x.DType {
			return c.errorf("constant_value is %s, want %s", t.DType, x.DType)
		}
		value = c.inArg(2)
	} else {
		bits = ir.EncodeFloat(float64(c.n.Attrs.Float("value", 0)), x.DType)
	}
	return c.indexMap(maps, value, bits)
}

func buildResize(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	if y.Shape.Rank() != x.Shape.Rank() || y.DType != x.DType {
		return c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	rs, err := ir.ResizeTaps(c.g, c.n)
	if err != nil {
		return c.valueErr(err)
	}
	if rs.Mode == "nearest" {
		maps := make([][]int32, len(rs.Axes))
		for d, t := range rs.Axes {
			maps[d] = t.Index
			for q, out := range t.Outside {
				if out {
					maps[d][q] = -1
				}
			}
		}
		return c.indexMap(maps, null(), ir.EncodeFloat(float64(rs.Extrapolation), x.DType))
	}
	if x.DType != ir.Float32 {
		return c.unsupported(x.DType)
	}
	n := y.Shape.Elements()
	if x.Shape.Rank() == 0 || n == 0 {
		return c.errorf("cannot interpolate a scalar or empty tensor")
	}
	// Axes that copy their input merge with an identity neighbour, as in
	// indexMap; the last axis stays, so that the kernel has one.
	xs := x.Shape.Strides()
	var dims, st, off, taps []int64
	var idx []int32
	var w []float32
	identity := false
	r := len(rs.Axes)
	for d, t := range rs.Axes {
		id := t.Identity(x.Shape[d])
		switch {
		case id && y.Shape[d] == 1 && d < r-1:
			continue
		case id && identity:
			dims[len(dims)-1] *= y.Shape[d]
			st[len(st)-1] = xs[d]
			continue
		case id:
			off, taps = append(off, -1), append(taps, 1)
		default:
			o := int64(len(idx))
			off, taps = append(off, o), append(taps, int64(t.N))
			idx, w = append(idx, t.Index...), append(w, t.Weight...)
			for q, out := range t.Outside {
				if out {
					idx[o+int64(q*t.N)] = -1
				}
			}
		}
		identity = id
		dims, st = append(dims, y.Shape[d]), append(st, xs[d])
	}
	if len(dims) > maxRank {
		return c.errorf("a resize of rank %d (after merging axes) is more than the CUDA kernels' %d", len(dims), maxRank)
	}
	if len(idx) == 0 {
		// Every axis copies its input.
		c.copyBytes(c.inArg(0), c.outArg(0), y.Bytes())
		return nil
	}
	p := make([]uint64, 2+4*maxRank)
	p[0], p[1] = uint64(len(dims)), uint64(n)
	for d := range dims {
		p[2+d], p[2+maxRank+d], p[2+2*maxRank+d], p[2+3*maxRank+d] = uint64(dims[d]), uint64(st[d]), uint64(off[d]), uint64(taps[d])
	}
	c.elementwise(index, "resize_f32", n, c.inArg(0), c.outArg(0), c.extra(raw.Bytes(idx)), c.extra(raw.Bytes(w)), words(p), f32(rs.Extrapolation))
	return nil
}

// maxGatherAxes is the most data axes a GatherND index addresses on the
// CUDA backend.
const maxGatherAxes = 8

func buildGatherND(c *buildContext) error {
	if err := c.need(2); err != nil {
		return err
	}
	x, ind, y := c.in(0), c.in(1), c.out(0)
	is, size, err := c.gatherTypes(x, ind)
	if err != nil {
		return err
	}
	b := c.n.Attrs.Int("batch_dims", 0)
	r := int64(ind.Shape.Rank())
	if r < 1 || b < 0 || b >= r || b > int64(x.Shape.Rank()) {
		return c.errorf("indices %v do not fit data %v with batch_dims %d", ind.Shape, x.Shape, b)
	}
	k := ind.Shape[r-1]
	if b+k > int64(x.Shape.Rank()) || y.DType != x.DType {
		return c.errorf("indices %v address more axes than data %v has", ind.Shape, x.Shape)
	}
	if k > maxGatherAxes {
		return c.errorf("indices of %d values address more than the CUDA kernel's %d axes", k, maxGatherAxes)
	}
	xs := x.Shape.Strides()
	tuples, slice := prod(ind.Shape[b:r-1]), prod(x.Shape[b+k:])
	n := y.Shape.Elements()
	if n != prod(x.Shape[:b])*tuples*slice {
		return c.errorf("output %v does not hold the %d slices of %d elements", y.Shape, prod(x.Shape[:b])*tuples, slice)
	}
	if n == 0 {
		return nil
	}
	p := make([]uint64, 5+2*maxGatherAxes)
	p[0], p[1], p[2], p[3], p[4] = uint64(n), uint64(slice), uint64(k), uint64(tuples), uint64(prod(x.Shape[b:]))
	for j := range k {
		d := x.Shape[b+j]
		if d == 0 {
			return c.errorf("gathers from an empty axis")
		}
		p[5+j], p[5+maxGatherAxes+j] = uint64(d), uint64(xs[b+j])
	}
	c.elementwise(index, fmt.Sprintf("gathernd_%d_%s", size, is), n, c.inArg(0), c.inArg(1), c.outArg(0), words(p))
	return nil
}

// topKDirect is the longest row TopK ranks among all its elements; a
// longer one first keeps its k first elements (topk_select) and ranks
// those.
const topKDirect = 4096

func buildTopK(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	var s string
	keyBytes := int64(4)
	switch x.DType {
	case ir.Float32:
		s = "f32"
	case ir.Int32:
		s = "i32"
	case ir.Int64:
		s, keyBytes = "i64", 8
	default:
		return c.unsupported(x.DType)
	}
	if y.DType != x.DType || y.Shape.Rank() != x.Shape.Rank() {
		return c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	if t := c.out(1); t != nil && (t.DType != ir.Int64 || !t.Shape.Equal(y.Shape)) {
		return c.errorf("indices output %s%v, want int64%v", t.DType, t.Shape, y.Shape)
	}
	axis, err := ir.NormAxis(c.n.Attrs.Int("axis", -1), x.Shape.Rank())
	if err != nil {
		return c.errorf("%v", err)
	}
	outer, n, inner, k := prod(x.Shape[:axis]), x.Shape[axis], prod(x.Shape[axis+1:]), y.Shape[axis]
	if k > n {
		return c.errorf("k = %d is more than the %d elements along axis %d", k, n, axis)
	}
	if n > math.MaxInt32 {
		return c.errorf("rows of %d elements are more than the CUDA kernels handle", n)
	}
	rows := outer * inner
	if rows == 0 || k == 0 {
		return nil
	}
	largest := uint64(0)
	if c.n.Attrs.Int("largest", 1) != 0 {
		largest = 1
	}
	// The values come out sorted whatever the sorted attribute says, as
	// on the CPU backend.
	p := words([]uint64{uint64(rows), uint64(n), uint64(inner), uint64(k), largest})
	ck, ci := null(), null()
	m := n // candidates a row
	if n > topKDirect {
		keys := plan.AlignUp(rows*k*keyBytes, Alignment)
		c.scratch = keys + rows*k*4
		ck, ci = arg{kind: argScratch}, arg{kind: argScratch, off: keys}
		c.launches = append(c.launches, launch{node: c.node, module: index, kernel: "topk_select_" + s,
			grid: [3]uint32{uint32(min(rows, 65535)), 1, 1}, block: [3]uint32{1024, 1, 1}, args: []arg{c.inArg(0), ck, ci, p}})
		m = k
	}
	c.launches = append(c.launches, launch{node: c.node, module: index, kernel: "topk_rank_" + s,
		grid: [3]uint32{uint32((m + threads - 1) / threads), uint32(min(rows, 65535)), 1}, block: [3]uint32{threads, 1, 1},
		args: []arg{c.inArg(0), c.outArg(0), c.optOut(1), ck, ci, p}})
	return nil
}
