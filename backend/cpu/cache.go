package cpu

import (
	"fmt"
	"github.com/berth-ml/berth/backend/cpu/vmath"
	"math"

	"github.com/berth-ml/berth/ir"
)

// The operators that keep a decoder's keys and values between runs
// (ir.BerthDomain; see ir.CacheShape): CacheWrite copies a run's rows into
// the cache at the run's position, and CachedAttention attends over the
// cache up to each query's position.

// cachePosition reads a cache operator's position and checks that rows
// rows from it fit a cache of c rows. A position out of range is the
// caller's error, reported as the kernel's failure.
func cachePosition(op string, b []byte, rows, c int) int {
	pos := view[int64](b)[0]
	if pos < 0 || pos > int64(c-rows) {
		panic(fmt.Sprintf("%s: %d rows at position %d do not fit a cache of %d rows", op, rows, pos, c))
	}
	return int(pos)
}

// cacheWriteKernel writes x[t, w] over rows pos… of the cache[c, w]: its
// output is the cache's own bytes (an update in place; see ir.UpdatesState).
type cacheWriteKernel struct{ t, c, w int }

func buildCacheWrite(c *buildContext) (Kernel, int64, error) {
	t, rows, w, err := ir.CacheWriteShape(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &cacheWriteKernel{t: int(t), c: int(rows), w: int(w)}, 0, nil
}

func (k *cacheWriteKernel) Run(_ *Workers, in, out [][]byte, _ []byte) {
	pos := cachePosition("CacheWrite", in[2], k.t, k.c)
	copy(out[0][4*pos*k.w:4*(pos+k.t)*k.w], in[1])
}

// cachedAttentionKernel is causal attention over a cache: query i of head
// h, at position pos+i, attends to rows 0 to pos+i of cache head h/group.
// Each worker takes whole heads, a query at a time: the scaled query and
// its scores in an area of its own, the softmax, then the values weighted
// by the probabilities.
type cachedAttentionKernel struct {
	t, c, heads, group, d int
	kvWidth               int // a cache row: kv heads × d
	scale                 float32
	per                   int // floats of a worker's area: scores, then the query
}

func buildCachedAttention(c *buildContext) (Kernel, int64, error) {
	t, rows, heads, kvHeads, d, err := ir.CacheShape(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	scale := c.n.Attrs.Float("scale", float32(1/math.Sqrt(float64(d))))
	k := &cachedAttentionKernel{t: int(t), c: int(rows), heads: int(heads), group: int(heads / kvHeads), d: int(d),
		kvWidth: int(kvHeads * d), scale: scale}
	k.per = roundUp(k.c+k.d, 16)
	return k, int64(4 * k.per * max(c.threads, 1)), nil
}

func (k *cachedAttentionKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	pos := cachePosition("CachedAttention", in[3], k.t, k.c)
	items := k.heads * k.t
	p := max(1, min(w.Threads(), len(scratch)/4/k.per, items, w.parts(items*(pos+k.t)*k.d)))
	w.forArgs(p, p, k, args{int64(p), int64(pos)}, in, out, scratch)
}

// rangeArgs runs workers [lo, hi) of a[0], at position a[1]: each its
// share of the heads' queries, head after head.
func (k *cachedAttentionKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	p, pos := int(a[0]), int(a[1])
	q, keys, vals, y := f32s(in[0]), f32s(in[1]), f32s(in[2]), f32s(out[0])
	items := k.heads * k.t
	width := k.heads * k.d
	for wi := lo; wi < hi; wi++ {
		area := f32s(scratch)[wi*k.per:][:k.per]
		scores, qs := area[:k.c], area[k.c:k.c+k.d]
		for it := wi * items / p; it < (wi+1)*items/p; it++ {
			h, i := it/k.t, it%k.t
			n := pos + i + 1 // the rows query i sees
			vmath.Scale(qs, q[i*width+h*k.d:][:k.d], k.scale)
			kv := (h / k.group) * k.d
			s := scores[:n]
			dotRows(s, qs, keys[kv:], n, k.kvWidth, k.d)
			m := vmath.Max(s)
			sum := vmath.ExpSum(s, s, m)
			o := y[i*width+h*k.d:][:k.d]
			weightRows(o, s, vals[kv:], n, k.kvWidth, k.d)
			vmath.Scale(o, o, float32(1/sum))
		}
	}
}

// dotRows sets s[j] = Σ_c q[c]·k[j·stride+c] for j < rows, c < d.
func dotRows(s, q, k []float32, rows, stride, d int) {
	if rows == 0 {
		return
	}
	_ = k[(rows-1)*stride+d-1]
	if vmath.Asm && d%8 == 0 {
		dotRowsAVX2(&s[0], &q[0], &k[0], rows, stride, d)
		return
	}
	q = q[:d]
	for j := range s[:rows] {
		r := k[j*stride:][:d]
		var acc float32
		for c, v := range q {
			acc += v * r[c]
		}
		s[j] = acc
	}
}

// weightRows sets o[c] = Σ_j p[j]·v[j·stride+c] for c < d, j < rows.
func weightRows(o, p, v []float32, rows, stride, d int) {
	o = o[:d]
	if rows == 0 {
		clear(o)
		return
	}
	_ = v[(rows-1)*stride+d-1]
	if vmath.Asm && d%8 == 0 {
		weightRowsAVX2(&o[0], &p[0], &v[0], rows, stride, d)
		return
	}
	clear(o)
	for j, pj := range p[:rows] {
		axpy(o, v[j*stride:][:d], pj)
	}
}
