package cpu

import (
	"fmt"
	"unsafe"

	"github.com/berth-ml/berth/ir"
)

// viewKernel is an op that keeps the bytes and changes only the shape
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity, inference Dropout). The
// planner usually aliases its output to its input; then it does nothing.
type viewKernel struct {
	mask bool // Dropout's optional mask output, all true
}

func buildView(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != y.DType || x.Shape.Elements() != y.Shape.Elements() {
		return nil, 0, c.errorf("output %s%v does not hold the input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	k := &viewKernel{}
	if c.n.Op == "Dropout" {
		if t := c.in(2); t != nil {
			v, err := c.constInts(2)
			if err != nil {
				return nil, 0, err
			}
			if len(v) > 0 && v[0] != 0 {
				return nil, 0, c.errorf("training mode is not supported")
			}
		}
		if m := c.out(1); m != nil {
			if m.DType != ir.Bool || m.Shape.Elements() != x.Shape.Elements() {
				return nil, 0, c.errorf("mask output %s%v must be bool %v", m.DType, m.Shape, x.Shape)
			}
			k.mask = true
		}
	}
	return k, 0, nil
}

func (k *viewKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	copyDistinct(out[0], in[0])
	if k.mask {
		if m := outAt(out, 1); m != nil {
			fill(m, 1)
		}
	}
}

// strided copies a strided view of a source into a contiguous output, row
// by row: Transpose, Slice and Expand are all of this form.
type strided struct {
	esize int
	dims  []int // outer output dims
	str   []int // source element stride of each outer dim (may be 0 or negative)
	inner int   // elements per row
	istep int   // source stride along a row
	base  int   // source element of output element 0
	rows  int
	total int
}

// newStrided merges what it can of an output shape whose element at index
// (i0, i1, …) is the source element base + Σ ik·str[k].
func newStrided(esize int, shape, str []int, base int) (*strided, error) {
	s := &strided{esize: esize, base: base, total: prod(shape)}
	var d, st []int
	for i, n := range shape {
		if n == 1 {
			continue
		}
		if k := len(d); k > 0 && st[k-1] == str[i]*n {
			d[k-1] *= n
			st[k-1] = str[i]
			continue
		}
		d, st = append(d, n), append(st, str[i])
	}
	if len(d) > maxDims {
		return nil, fmt.Errorf("copy of rank %d is too deep", len(d))
	}
	s.inner, s.istep = 1, 1
	if k := len(d); k > 0 {
		s.inner, s.istep = d[k-1], st[k-1]
		d, st = d[:k-1], st[:k-1]
	}
	s.dims, s.str = d, st
	s.rows = prod(d)
	if s.total == 0 {
		s.rows = 0
	}
	return s, nil
}

func (s *strided) run(w *Workers, in, out [][]byte) {
	if n := s.blockItems(); n > 0 {
		w.forArgs(n, w.parts(s.total), s, args{1}, in, out, nil)
		return
	}
	w.forArgs(s.rows, w.parts(s.total), s, args{}, in, out, nil)
}

// blockItems is, for a copy that transposes — 4-byte elements, rows
// gathered with a stride, consecutive rows starting at consecutive source
// elements — the number of blocks of sixteen rows it runs as, sixteen
// columns at a time through tr16; 0 for any other copy or without
// AVX-512. A row-by-row gather reads each source line sixteen times over.
func (s *strided) blockItems() int {
	k := len(s.dims)
	if !dw512 || s.esize != 4 || s.istep == 0 || s.istep == 1 || k == 0 || s.str[k-1] != 1 || s.rows == 0 {
		return 0
	}
	return s.rows / s.dims[k-1] * ceilDiv(s.dims[k-1], depthwiseChannelsLanes)
}

// blocks copies blocks [lo, hi) of blockItems: block b is rows
// [r0, r0+16) (fewer at the end of the last outer dimension) of outer
// index b / nb.
func (s *strided) blocks(in, out [][]byte, lo, hi int) {
	k := len(s.dims)
	dl := s.dims[k-1]
	nb := ceilDiv(dl, depthwiseChannelsLanes)
	src, dst := f32s(in[0]), f32s(out[0])
	for b := lo; b < hi; b++ {
		o, d0 := b/nb, b%nb*depthwiseChannelsLanes
		// The source element of row o·dl + d0, column 0.
		off := s.base + d0
		for i, r := k-2, o; i >= 0; i-- {
			off += r % s.dims[i] * s.str[i]
			r /= s.dims[i]
		}
		// Source row j (every istep) holds the blocks' rows' column j.
		transpose(dst, (o*dl+d0)*s.inner, s.inner, src, off, s.istep, s.inner, min(depthwiseChannelsLanes, dl-d0))
	}
}

// transpose sets dst[d0 + c·ldd + r] = src[s0 + r·lds + c] for r < rows,
// c < cols (lds and ldd may be negative), sixteen rows by sixteen columns
// at a time through tr16, and a last band of at most transposeTail rows
// element by element (the 49 positions of a 7² plane: three blocks and
// one row). The bounds are checked once, at the corners; the blocks'
// row pointers then move on by address. Without AVX-512 (dw512, which
// tr16 needs) every row goes element by element.
func transpose(dst []float32, d0, ldd int, src []float32, s0, lds, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	_, _ = src[s0+min(0, (rows-1)*lds)], src[s0+max(0, (rows-1)*lds)+cols-1]
	_, _ = dst[d0+min(0, (cols-1)*ldd)], dst[d0+max(0, (cols-1)*ldd)+rows-1]
	const L = depthwiseChannelsLanes
	var zeros, sink [L]float32
	var sp, dp [L]*float32
	sb, db := unsafe.Pointer(unsafe.SliceData(src)), unsafe.Pointer(unsafe.SliceData(dst))
	r0 := 0
	for ; dw512 && rows-r0 > transposeTail; r0 += L {
		mr := min(L, rows-r0)
		for i := range sp {
			sp[i] = &zeros[0]
			if i < mr {
				sp[i] = (*float32)(unsafe.Add(sb, 4*(s0+(r0+i)*lds)))
			}
		}
		for c0 := 0; c0 < cols; c0 += L {
			mc := min(L, cols-c0)
			for i := range dp {
				dp[i] = &sink[0]
				if i < mc {
					dp[i] = (*float32)(unsafe.Add(db, 4*(d0+(c0+i)*ldd+r0)))
				}
			}
			tr16(&dp, &sp, 1<<mc-1, 1<<mr-1)
			if c0+L < cols {
				// Still inside the rows: the next block's columns.
				for i := range mr {
					sp[i] = (*float32)(unsafe.Add(unsafe.Pointer(sp[i]), 4*L))
				}
			}
		}
	}
	for r := r0; r < rows; r++ {
		for c, v := range src[s0+r*lds:][:cols] {
			dst[d0+c*ldd+r] = v
		}
	}
}

// transposeTail is the most rows that transpose copies one by one rather
// than through a block of sixteen.
const transposeTail = 2

func (s *strided) rangeArgs(in, out [][]byte, _ []byte, a args, lo, hi int) {
	if a[0] == 1 {
		s.blocks(in, out, lo, hi)
		return
	}
	var idx [maxDims]int
	off := s.base + odometerAt(idx[:], s.dims, s.str, lo)
	src, dst := in[0], out[0]
	es := s.esize
	for row := lo; row < hi; row++ {
		d := dst[row*s.inner*es : (row+1)*s.inner*es]
		switch {
		case s.istep == 1:
			// A Slice the planner placed inside its input copies
			// onto itself: nothing to do.
			copyDistinct(d, src[off*es:(off+s.inner)*es])
		default:
			switch es {
			case 1:
				gatherRow(d, src, off, s.istep)
			case 2:
				gatherRow(view[uint16](d), view[uint16](src), off, s.istep)
			case 4:
				gatherRow(view[uint32](d), view[uint32](src), off, s.istep)
			case 8:
				gatherRow(view[uint64](d), view[uint64](src), off, s.istep)
			}
		}
		off = odometerNext(idx[:], s.dims, s.str, off)
	}
}

// gatherRow copies src[off], src[off+step], … into d (step may be 0).
func gatherRow[T any](d, src []T, off, step int) {
	if step == 0 {
		fill(d, src[off])
		return
	}
	for i := range d {
		d[i] = src[off]
		off += step
	}
}

// stridedKernel runs one strided copy.
type stridedKernel struct{ s *strided }

func (k *stridedKernel) Run(w *Workers, in, out [][]byte, scratch []byte) { k.s.run(w, in, out) }

// rowStrides returns the row-major element strides of a shape.
func rowStrides(shape []int) []int {
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= shape[i]
	}
	return st
}

func buildTranspose(c *buildContext) (Kernel, int64, error) {
	x, y, err := c.inOut()
	if err != nil {
		return nil, 0, err
	}
	r := x.Shape.Rank()
	perm := c.attrs().Ints("perm", nil)
	if perm == nil {
		perm = make([]int64, r)
		for i := range perm {
			perm[i] = int64(r - 1 - i)
		}
	}
	if len(perm) != r {
		return nil, 0, c.errorf("perm %v does not fit rank %d", perm, r)
	}
	xs := ints(x.Shape)
	xst := rowStrides(xs)
	shape, str := make([]int, r), make([]int, r)
	seen := make([]bool, r)
	for i, p := range perm {
		if p < 0 || int(p) >= r || seen[p] {
			return nil, 0, c.errorf("perm %v is not a permutation", perm)
		}
		seen[p] = true
		shape[i], str[i] = xs[p], xst[p]
	}
	if !ir.Shape(toShape(shape)).Equal(y.Shape) {
		return nil, 0, c.errorf("output %v, the permutation gives %v", y.Shape, shape)
	}
	s, err := newStrided(x.DType.Size(), shape, str, 0)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &stridedKernel{s}, 0, nil
}

func toShape(v []int) ir.Shape {
	s := make(ir.Shape, len(v))
	for i, d := range v {
		s[i] = int64(d)
	}
	return s
}

func buildExpand(c *buildContext) (Kernel, int64, error) {
	x, y, err := c.inOut()
	if err != nil {
		return nil, 0, err
	}
	ys, xs := ints(y.Shape), ints(x.Shape)
	if len(xs) > len(ys) {
		return nil, 0, c.errorf("input %v does not broadcast to output %v", x.Shape, y.Shape)
	}
	xst := rowStrides(xs)
	str := make([]int, len(ys))
	for i := range ys {
		j := i - (len(ys) - len(xs))
		if j < 0 {
			continue
		}
		switch xs[j] {
		case ys[i]:
			str[i] = xst[j]
		case 1:
		default:
			return nil, 0, c.errorf("input %v does not broadcast to output %v", x.Shape, y.Shape)
		}
	}
	s, err := newStrided(x.DType.Size(), ys, str, 0)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &stridedKernel{s}, 0, nil
}

func buildSlice(c *buildContext) (Kernel, int64, error) {
	x, y, err := c.inOut()
	if err != nil {
		return nil, 0, err
	}
	sp, err := ir.ResolveSlice(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	xs := ints(x.Shape)
	xst := rowStrides(xs)
	shape, str := ints(sp.Len), make([]int, len(xs))
	base := 0
	for ax := range xs {
		str[ax] = xst[ax] * int(sp.Step[ax])
		if sp.Len[ax] > 0 {
			base += int(sp.Start[ax]) * xst[ax]
		}
	}
	if !toShape(shape).Equal(y.Shape) {
		return nil, 0, c.errorf("output %v, the slice gives %v", y.Shape, shape)
	}
	s, err := newStrided(x.DType.Size(), shape, str, base)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &stridedKernel{s}, 0, nil
}

func clamp(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }

// concatKernel copies each input's blocks into place along the axis; an
// input the planner already placed inside the output is skipped.
type concatKernel struct {
	outer int
	blk   []int // bytes per outer index of each input
	row   int   // bytes per outer index of the output
	// channels marks a float32 concatenation of 4-D tensors along their
	// channels, every input's a whole number of blocks of sixteen: the
	// same copies then concatenate NCHW16c tensors (each image's blocks
	// of one input follow those of the input before).
	channels bool
}

func buildConcat(c *buildContext) (Kernel, int64, error) {
	y := c.out(0)
	n := len(c.n.Inputs)
	if err := c.need(n); err != nil {
		return nil, 0, err
	}
	if n == 0 {
		return nil, 0, c.errorf("has no input")
	}
	r := y.Shape.Rank()
	axis, err := ir.NormAxis(c.attrs().Int("axis", 0), r)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	ys := ints(y.Shape)
	es := y.DType.Size()
	inner := prod(ys[axis+1:]) * es
	k := &concatKernel{outer: prod(ys[:axis]), row: ys[axis] * inner}
	sum := 0
	for i := 0; i < n; i++ {
		t := c.in(i)
		if t.DType != y.DType || t.Shape.Rank() != r {
			return nil, 0, c.errorf("input %q %s%v does not match output %s%v", t.Name, t.DType, t.Shape, y.DType, y.Shape)
		}
		for j := range r {
			if j != axis && t.Shape[j] != y.Shape[j] {
				return nil, 0, c.errorf("input %q %v does not match output %v off axis %d", t.Name, t.Shape, y.Shape, axis)
			}
		}
		sum += int(t.Shape[axis])
		k.blk = append(k.blk, int(t.Shape[axis])*inner)
	}
	if sum != ys[axis] {
		return nil, 0, c.errorf("inputs add up to %d along axis %d, output has %d", sum, axis, ys[axis])
	}
	k.channels = y.DType == ir.Float32 && r == 4 && axis == 1
	for i := 0; i < n; i++ {
		k.channels = k.channels && c.in(i).Shape[1]%blockLanes == 0
	}
	return k, 0, nil
}

func (k *concatKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	y := out[0]
	for o := 0; o < k.outer; o++ {
		at := o * k.row
		for i, b := range k.blk {
			if b > 0 {
				copyDistinct(y[at:at+b], in[i][o*b:(o+1)*b])
			}
			at += b
		}
	}
}

// splitKernel is Concat backwards: the output shapes give the split.
type splitKernel struct {
	outer int
	blk   []int
	row   int
}

func buildSplit(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x := c.in(0)
	r := x.Shape.Rank()
	axis, err := ir.NormAxis(c.attrs().Int("axis", 0), r)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	xs := ints(x.Shape)
	inner := prod(xs[axis+1:]) * x.DType.Size()
	k := &splitKernel{outer: prod(xs[:axis]), row: xs[axis] * inner}
	sum := 0
	for i := range c.n.Outputs {
		t := c.out(i)
		if t == nil {
			return nil, 0, c.errorf("output %d is missing", i)
		}
		if t.DType != x.DType || t.Shape.Rank() != r {
			return nil, 0, c.errorf("output %q %s%v does not match input %s%v", t.Name, t.DType, t.Shape, x.DType, x.Shape)
		}
		sum += int(t.Shape[axis])
		k.blk = append(k.blk, int(t.Shape[axis])*inner)
	}
	if sum != xs[axis] {
		return nil, 0, c.errorf("outputs add up to %d along axis %d, input has %d", sum, axis, xs[axis])
	}
	return k, 0, nil
}

func (k *splitKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	x := in[0]
	for o := 0; o < k.outer; o++ {
		at := o * k.row
		for i, b := range k.blk {
			if b > 0 {
				copyDistinct(out[i][o*b:(o+1)*b], x[at:at+b])
			}
			at += b
		}
	}
}

// gatherKernel picks slices of data along an axis by index. Negative
// indices count from the end; an index still out of range yields zeros.
type gatherKernel struct {
	outer, dim, n int // outer blocks, size of the axis, number of indices
	blk           int // bytes of one slice
	idx64         bool
	// read, for a large constant table, copies a slice from the file the
	// table is mapped from (BuildOptions.Read); nil otherwise.
	read func(dst, src []byte) bool
}

// gatherReadMin is the smallest constant table, in bytes, whose slices
// Gather reads through BuildOptions.Read.
const gatherReadMin = 8 << 20

func buildGather(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, ix, y := c.in(0), c.in(1), c.out(0)
	if ix.DType != ir.Int64 && ix.DType != ir.Int32 {
		return nil, 0, c.errorf("indices of type %s are not supported by the CPU backend", ix.DType)
	}
	if y.DType != x.DType {
		return nil, 0, c.errorf("output is %s, want %s", y.DType, x.DType)
	}
	r := x.Shape.Rank()
	if r == 0 {
		return nil, 0, c.errorf("data must have rank 1 or more")
	}
	axis, err := ir.NormAxis(c.attrs().Int("axis", 0), r)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	xs := ints(x.Shape)
	k := &gatherKernel{outer: prod(xs[:axis]), dim: xs[axis], n: int(ix.Shape.Elements()),
		blk: prod(xs[axis+1:]) * x.DType.Size(), idx64: ix.DType == ir.Int64}
	if want := int64(k.outer * k.n * k.blk); want != y.Bytes() {
		return nil, 0, c.errorf("output %v does not match data %v gathered by %v", y.Shape, x.Shape, ix.Shape)
	}
	if x.IsConst() && x.Bytes() >= gatherReadMin {
		k.read = c.read
	}
	return k, 0, nil
}

func (k *gatherKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	x, y := in[0], out[0]
	var i64 []int64
	var i32 []int32
	if k.idx64 {
		i64 = view[int64](in[1])
	} else {
		i32 = view[int32](in[1])
	}
	b := k.blk
	for o := 0; o < k.outer; o++ {
		for p := 0; p < k.n; p++ {
			var i int64
			if k.idx64 {
				i = i64[p]
			} else {
				i = int64(i32[p])
			}
			if i < 0 {
				i += int64(k.dim)
			}
			d := y[(o*k.n+p)*b : (o*k.n+p+1)*b]
			if i < 0 || i >= int64(k.dim) {
				clear(d)
				continue
			}
			s := (o*k.dim + int(i)) * b
			if k.read == nil || !k.read(d, x[s:s+b]) {
				copy(d, x[s:s+b])
			}
		}
	}
}

// odometerAt sets idx to the multi-index of flat position n over the
// dimensions dims and returns its offset under the strides str.
func odometerAt(idx, dims, str []int, n int) (off int) {
	for i := len(dims) - 1; i >= 0; i-- {
		idx[i] = n % dims[i]
		n /= dims[i]
		off += idx[i] * str[i]
	}
	return off
}

// odometerNext advances the multi-index idx over dims by one position and
// returns off moved along under the strides str.
func odometerNext(idx, dims, str []int, off int) int {
	for i := len(dims) - 1; i >= 0; i-- {
		idx[i]++
		off += str[i]
		if idx[i] < dims[i] {
			return off
		}
		off -= idx[i] * str[i]
		idx[i] = 0
	}
	return off
}
