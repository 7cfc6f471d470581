package ir

import "fmt"

// The operators of BerthDomain that keep a decoder's keys and values
// between runs (see Graph.State):
//
//   - CacheWrite(cache, x, pos) → cache': the float32 rows x[t, w] written
//     over rows pos to pos+t-1 of cache[c, w], in place; the output is the
//     cache as it is after the write (the same bytes). pos is an int64
//     tensor of one element, read at run time; a run whose pos+t exceeds c
//     fails.
//   - CachedAttention(q, k, v, pos) → y: causal attention of the queries
//     q[t, heads·d] at positions pos to pos+t-1 over the first pos+t rows
//     of the caches k and v [c, kv_heads·d] (attributes heads and
//     kv_heads; query head h reads cache head h/(heads/kv_heads)), the
//     scores scaled by the attribute scale: y[t, heads·d].

// CacheShape checks the operands of a CachedAttention node and returns its
// sizes: t queries, c cache rows, heads and kvHeads heads of d values.
func CacheShape(g *Graph, n *Node) (t, c, heads, kvHeads, d int64, err error) {
	ts, err := operands(g, n, 4, 4)
	if err != nil {
		return
	}
	q, k, v := ts[0], ts[1], ts[2]
	for _, x := range ts[:3] {
		if x.DType != Float32 || x.Shape.Rank() != 2 {
			return 0, 0, 0, 0, 0, fmt.Errorf("input %q is %s%v, want float32 of rank 2", x.Name, x.DType, x.Shape)
		}
	}
	if err = checkPosition(ts[3]); err != nil {
		return
	}
	heads, kvHeads = n.Attrs.Int("heads", 0), n.Attrs.Int("kv_heads", 0)
	if heads <= 0 || kvHeads <= 0 || heads%kvHeads != 0 {
		return 0, 0, 0, 0, 0, fmt.Errorf("%d heads over %d key-value heads", heads, kvHeads)
	}
	if !k.Shape.Equal(v.Shape) {
		return 0, 0, 0, 0, 0, fmt.Errorf("keys %v and values %v differ in shape", k.Shape, v.Shape)
	}
	t, c = q.Shape[0], k.Shape[0]
	d = q.Shape[1] / heads
	if d <= 0 || q.Shape[1] != heads*d || k.Shape[1] != kvHeads*d {
		return 0, 0, 0, 0, 0, fmt.Errorf("queries %v and caches %v are not %d and %d heads of one size", q.Shape, k.Shape, heads, kvHeads)
	}
	if t > c {
		return 0, 0, 0, 0, 0, fmt.Errorf("%d queries for a cache of %d rows", t, c)
	}
	return t, c, heads, kvHeads, d, nil
}

// checkPosition checks a cache operator's position input: one int64.
func checkPosition(pos *Tensor) error {
	if pos.DType != Int64 || pos.Shape.Elements() != 1 {
		return fmt.Errorf("position %q is %s%v, want one int64", pos.Name, pos.DType, pos.Shape)
	}
	return nil
}

func init() {
	register(inferCacheWrite, "CacheWrite")
	register(inferCachedAttention, "CachedAttention")
}

// CacheWriteShape checks the operands of a CacheWrite node and returns
// its sizes: t rows written into a cache of c rows of w values.
func CacheWriteShape(g *Graph, n *Node) (t, c, w int64, err error) {
	ts, err := operands(g, n, 3, 3)
	if err != nil {
		return
	}
	cache, x := ts[0], ts[1]
	if cache.DType != Float32 || x.DType != Float32 || cache.Shape.Rank() != 2 || x.Shape.Rank() != 2 {
		return 0, 0, 0, fmt.Errorf("cache %s%v and rows %s%v, want float32 matrices", cache.DType, cache.Shape, x.DType, x.Shape)
	}
	if x.Shape[1] != cache.Shape[1] || x.Shape[0] > cache.Shape[0] {
		return 0, 0, 0, fmt.Errorf("rows %v do not fit a cache %v", x.Shape, cache.Shape)
	}
	if err = checkPosition(ts[2]); err != nil {
		return
	}
	return x.Shape[0], cache.Shape[0], cache.Shape[1], nil
}

func inferCacheWrite(g *Graph, n *Node) ([]Type, error) {
	_, c, w, err := CacheWriteShape(g, n)
	if err != nil {
		return nil, err
	}
	return []Type{{DType: Float32, Shape: Shape{c, w}}}, nil
}

func inferCachedAttention(g *Graph, n *Node) ([]Type, error) {
	t, _, heads, _, d, err := CacheShape(g, n)
	if err != nil {
		return nil, err
	}
	return []Type{{DType: Float32, Shape: Shape{t, heads * d}}}, nil
}
