package cpu

import (
	"github.com/berth-ml/berth/ir"
)

// tfIdfKernel counts the n-grams of each row of integer tokens that the
// pool lists (with up to maxSkip tokens skipped between the items of an
// n-gram) and writes their term frequencies, IDF weights or both.
type tfIdfKernel struct {
	wide             bool
	rows, cols, out  int
	minN, maxN, skip int
	mode             string
	grams            map[string]int // n-gram (as its tokens' bytes) → output column
	weights          []float32
}

func buildTfIdf(c *buildContext) (Kernel, int64, error) {
	x, y := c.in(0), c.out(0)
	at := c.attrs()
	k := &tfIdfKernel{wide: x.DType == ir.Int64, minN: int(at.Int("min_gram_length", 1)), maxN: int(at.Int("max_gram_length", 1)),
		skip: int(at.Int("max_skip_count", 0)), mode: at.String("mode", "TF"), grams: map[string]int{}}
	switch k.mode {
	case "TF", "IDF", "TFIDF":
	default:
		return nil, 0, c.errorf("mode %q is not supported", k.mode)
	}
	k.rows, k.cols = 1, int(x.Shape[0])
	if x.Shape.Rank() == 2 {
		k.rows, k.cols = int(x.Shape[0]), int(x.Shape[1])
	}
	k.out = int(y.Shape[y.Shape.Rank()-1])
	pool, starts, indexes := at.Ints("pool_int64s", nil), at.Ints("ngram_counts", nil), at.Ints("ngram_indexes", nil)
	if pool == nil {
		return nil, 0, c.errorf("only integer pools (pool_int64s) are supported")
	}
	id := 0
	for i, s := range starts {
		end := int64(len(pool))
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		n := i + 1
		for p := int(s); p+n <= int(end); p += n {
			if id >= len(indexes) {
				return nil, 0, c.errorf("ngram_indexes has %d entries, the pool more n-grams", len(indexes))
			}
			k.grams[gramKey(pool[p:p+n])] = int(indexes[id])
			id++
		}
	}
	if w := at.Floats("weights", nil); w != nil {
		k.weights = make([]float32, k.out)
		for i, v := range w {
			if i < len(indexes) {
				k.weights[indexes[i]] = v
			}
		}
	}
	return k, 0, nil
}

func gramKey(v []int64) string {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		for i := 0; i < 8; i++ {
			b = append(b, byte(x>>(8*i)))
		}
	}
	return string(b)
}

func (k *tfIdfKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	y := f32s(out[0])
	clear(y)
	gram := make([]int64, k.maxN)
	for r := 0; r < k.rows; r++ {
		row := y[r*k.out : (r+1)*k.out]
		tok := func(i int) int64 { return indexAt(in[0], k.wide, r*k.cols+i) }
		for n := max(k.minN, 1); n <= k.maxN; n++ {
			skips := k.skip
			if n == 1 {
				skips = 0
			}
			for s := 0; s <= skips; s++ {
				for start := 0; start+(n-1)*(s+1) < k.cols; start++ {
					for j := 0; j < n; j++ {
						gram[j] = tok(start + j*(s+1))
					}
					if col, ok := k.grams[gramKey(gram[:n])]; ok {
						row[col]++
					}
				}
			}
		}
		for i, v := range row {
			wt := float32(1)
			if k.weights != nil {
				wt = k.weights[i]
			}
			switch k.mode {
			case "IDF":
				if v > 0 {
					row[i] = wt
				}
			case "TFIDF":
				row[i] = v * wt
			}
		}
	}
}
