package cpu

// Row-vector depthwise convolution.
//
// On planes at most sixteen columns wide (the 14² and 7² stages) the band
// kernel's vectors of thirty-two columns are mostly padding, and the
// channel-blocked path (depthwiseChannelsGroup) pays two transposes a
// plane. Here a vector holds as many whole rows of one plane as fit in
// sixteen lanes, the filter's weights sit in registers, and a filter row's
// taps are one masked load of the rows it reads (zero outside the plane)
// shifted along the lanes: depthwiseRows3 and depthwiseRows5, for 3×3 and
// 5×5 filters of unit stride whose padding keeps the plane's size. The taps
// are added in the band kernel's order, starting from the bias; a tap that
// falls outside the plane adds nothing where the padded kernels add w·0.
//
// The same file holds the kernels' kin: depthwiseSplit3 (3×3, stride 2, any
// width) and depthwiseSplit5 (5×5, stride 2, narrow planes), which split
// input rows into even and odd columns, and depthwiseRowsWide3 (3×3, unit
// stride, planes wider than depthwiseRowsWide3Min), which walks a row
// sixteen columns at a time. depthwiseSplit3 and depthwiseRowsWide3 read
// rows outside the plane from a row of zeros, so their taps add w·0 as the
// band kernel's do.

// depthwiseRowsVec is one vector of depthwiseRows3's and depthwiseRows5's
// table: its byte offset in the plane, its store mask (the lanes of its
// whole rows inside the plane), and, for each filter row, the lanes of the
// rows it reads that lie inside the plane.
type depthwiseRowsVec struct {
	off   int64
	store uint16
	rows  [5]uint16
	_     [12]byte
}

// depthwiseRowsFits reports whether k's planes run as row vectors: a 2-D
// depthwise convolution, one output channel per group, a 3×3 or 5×5 filter
// of unit strides and dilations whose padding (half the filter each side)
// keeps the plane's size, and planes at most sixteen columns wide.
func (k *convKernel) depthwiseRowsFits() bool {
	kw := k.kern[2]
	return k.depthwise && k.mg == 1 && k.in == k.out && k.in[0] == 1 && k.kern[0] == 1 &&
		(kw == 3 || kw == 5) && k.kern[1] == kw && k.stride == [3]int{1, 1, 1} &&
		k.dil == [3]int{1, 1, 1} && k.pad == [3]int{0, kw / 2, kw / 2} &&
		k.in[2] <= depthwiseChannelsLanes && k.outSp > 0
}

// depthwiseRowsWide3Fits reports whether k's planes run through
// depthwiseRowsWide3: a 2-D depthwise convolution, one output channel per
// group, a 3×3 filter of unit strides and dilations padded one each side,
// planes more than depthwiseRowsWide3Min columns wide (narrower ones run as
// fast or faster in bands).
func (k *convKernel) depthwiseRowsWide3Fits() bool {
	return k.depthwise && k.mg == 1 && k.in == k.out && k.in[0] == 1 && k.kern == [3]int{1, 3, 3} &&
		k.stride == [3]int{1, 1, 1} && k.dil == [3]int{1, 1, 1} && k.pad == [3]int{0, 1, 1} &&
		k.in[2] > depthwiseRowsWide3Min && k.outSp > 0
}

// depthwiseRowsWide3Min is the widest plane that depthwiseRowsWide3 leaves
// to the band kernel.
const depthwiseRowsWide3Min = 64

// depthwiseRowsTable sets k.depthwiseRows and k.depthwiseRowsCols: the
// plane's vectors, g = 16/W rows each, and the masks of the column shifts.
func (k *convKernel) depthwiseRowsTable() {
	const L = depthwiseChannelsLanes
	H, W := k.in[1], k.in[2]
	g := L / W
	pad := k.kern[1] / 2
	k.depthwiseRows = make([]depthwiseRowsVec, ceilDiv(H, g))
	for i := range k.depthwiseRows {
		v := &k.depthwiseRows[i]
		r0 := i * g
		v.off = int64(4 * r0 * W)
		for l := range min(g, H-r0) * W {
			v.store |= 1 << l
		}
		for t := range k.kern[1] {
			for l := range g * W {
				if r := r0 + l/W + t - pad; r >= 0 && r < H {
					v.rows[t] |= 1 << l
				}
			}
		}
	}
	// A shift by s columns reads lane l+s: masked off where that is
	// another row's (or past the vector's rows).
	for i, s := range [4]int{-1, 1, -2, 2} {
		for l := range g * W {
			if c := l%W + s; c >= 0 && c < W {
				k.depthwiseRowsCols[i] |= 1 << l
			}
		}
	}
}

// depthwiseSplitVec is one output row of depthwiseSplit5's table: the byte
// offsets of its first filter row's input row (negative above the plane)
// and of the output row, its store mask (its columns), and, for each filter
// row, the load masks of the input row's first sixteen columns and of the
// rest (none for a row outside the plane).
type depthwiseSplitVec struct {
	in, out int64
	store   uint16
	rowsA   [5]uint16
	rowsB   [5]uint16
	_       [10]byte
}

// depthwiseSplitIdx holds the even column indices 0, 2, …, 30 and then the
// odd ones.
var depthwiseSplitIdx = func() (v [32]int32) {
	for j := range 16 {
		v[j], v[16+j] = int32(2*j), int32(2*j+1)
	}
	return v
}()

// depthwiseSplitFits reports whether k's planes run as stride-2 row
// vectors: a 2-D depthwise convolution, one output channel per group, of
// strides 2 and unit dilations, and either a 3×3 filter padded one before
// the plane (depthwiseSplit3, any width) or a 5×5 one padded two, onto
// output rows of at most sixteen columns from input rows of at most
// thirty-two (depthwiseSplit5).
func (k *convKernel) depthwiseSplitFits() bool {
	kw := k.kern[2]
	if !k.depthwise || k.mg != 1 || k.in[0] != 1 || k.kern[0] != 1 || k.kern[1] != kw ||
		k.stride != [3]int{1, 2, 2} || k.dil != [3]int{1, 1, 1} || k.pad != [3]int{0, kw / 2, kw / 2} || k.outSp == 0 {
		return false
	}
	return kw == 3 || kw == 5 && k.out[2] <= depthwiseChannelsLanes && k.in[2] <= 2*depthwiseChannelsLanes
}

// depthwiseSplitTable sets, for a 3×3 filter, k.depthwiseSplit3Rows (each
// output row's input rows' byte offsets, −1 outside the plane, and its own)
// and k.depthwiseSplit3Zero; for a 5×5 one k.depthwiseSplit, one vector per
// output row.
func (k *convKernel) depthwiseSplitTable() {
	const L = depthwiseChannelsLanes
	H, W, OW := k.in[1], k.in[2], k.out[2]
	if k.kvol == 9 {
		k.depthwiseSplit3Rows = make([]int64, 4*k.out[1])
		for i := range k.out[1] {
			for r := range 3 {
				off := int64(-1)
				if row := 2*i + r - 1; row >= 0 && row < H {
					off = int64(4 * row * W)
				}
				k.depthwiseSplit3Rows[4*i+r] = off
			}
			k.depthwiseSplit3Rows[4*i+3] = int64(4 * i * OW)
		}
		k.depthwiseSplit3Zero = make([]float32, roundUp(W, 2*L)+2*L)
		return
	}
	pad := k.kern[1] / 2
	k.depthwiseSplit = make([]depthwiseSplitVec, k.out[1])
	for i := range k.depthwiseSplit {
		v := &k.depthwiseSplit[i]
		v.in, v.out = int64(4*(2*i-pad)*W), int64(4*i*OW)
		v.store = 1<<OW - 1
		for r := range k.kern[1] {
			if row := 2*i + r - pad; row >= 0 && row < H {
				v.rowsA[r] = 1<<min(W, L) - 1
				v.rowsB[r] = 1<<max(W-L, 0) - 1
			}
		}
	}
}

// s2Chunks is how a row of w input columns and ow outputs runs sixteen
// outputs at a time from thirty-two columns (depthwiseSplit3, maxPool3s2): full
// whole chunks, then one whose loads are under masks' bits 0-15 and
// 16-31 and whose store is under bits 32-47 (none if those are 0).
func s2Chunks(w, ow int) (full int, masks uint64) {
	for 32*full+32 <= w && 16*full+16 <= ow {
		full++
	}
	lanes := func(n int) uint64 { return 1<<min(max(n, 0), 16) - 1 }
	return full, lanes(w-32*full) | lanes(w-32*full-16)<<16 | lanes(ow-16*full)<<32
}

// depthwiseSplitZero is the bias of a stride-2 row-vector convolution
// without one.
var depthwiseSplitZero float32

// rowVectors reports whether k was built for one of the row-vector
// kernels (its table or zero row is set).
func (k *convKernel) rowVectors() bool {
	return k.depthwiseRows != nil || k.depthwiseSplit != nil || k.depthwiseSplit3Rows != nil || k.depthwiseRowsZero != nil
}

// depthwiseRowsPlanes computes planes [lo, hi) of the images' nb·m output
// planes through the row-vector kernels (depthwiseRows3, depthwiseRows5 or
// depthwiseRowsWide3, or depthwiseSplit3 or depthwiseSplit5 for strides 2),
// a run of channels of one image per call, from x, which holds the input
// planes from plane xFrom on.
func (k *convKernel) depthwiseRowsPlanes(x []float32, xFrom int, y, wt, bias []float32, lo, hi int) {
	var lim *float32
	if k.lim != nil {
		lim = &k.lim[0]
	}
	for lo < hi {
		ch := lo % k.m
		n := min(hi-lo, k.m-ch)
		o, xi, w := &y[lo*k.outSp], &x[(lo-xFrom)*k.inSp], &wt[ch*k.kvol]
		var b *float32
		if bias != nil {
			b = &bias[ch]
		}
		switch {
		case k.depthwiseSplit3Rows != nil || k.depthwiseSplit != nil:
			// The stride-2 kernels read a bias always: one zero for
			// all channels where there is none.
			bstep := 4
			if b == nil {
				b, bstep = &depthwiseSplitZero, 0
			}
			if k.depthwiseSplit3Rows != nil {
				full, masks := s2Chunks(k.in[2], k.out[2])
				depthwiseSplit3(o, xi, w, b, bstep, &k.depthwiseSplit3Rows[0], k.out[1], full, masks, k.outSp, k.inSp, n, &depthwiseSplitIdx, lim, &k.depthwiseSplit3Zero[0])
			} else {
				depthwiseSplit5(o, xi, w, b, bstep, &k.depthwiseSplit[0], len(k.depthwiseSplit), k.in[2], k.outSp, k.inSp, n, &depthwiseSplitIdx, lim)
			}
		case k.depthwiseRowsZero != nil:
			depthwiseRowsWide3(o, xi, w, b, k.in[1], k.in[2], n, lim, &k.depthwiseRowsZero[0])
		case k.kvol == 25:
			depthwiseRows5(o, xi, w, b, &k.depthwiseRows[0], len(k.depthwiseRows), k.in[2], k.outSp, n, &k.depthwiseRowsCols, lim)
		default:
			depthwiseRows3(o, xi, w, b, &k.depthwiseRows[0], len(k.depthwiseRows), k.in[2], k.outSp, n, &k.depthwiseRowsCols, lim)
		}
		lo += n
	}
}
