package ir

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// nmsReference is the greedy selection compared box by box with every
// box kept before it, the plain reading of ONNX's NonMaxSuppression.
func nmsReference(boxes, scores []float64, batches, classes, n int, maxPerClass int64, iouThreshold, scoreThreshold float64, scoreGiven, center bool) [][3]int64 {
	var out [][3]int64
	corners := func(b, i int) (float64, float64, float64, float64) {
		v := boxes[(b*n+i)*4:]
		if center {
			return v[1] - v[3]/2, v[0] - v[2]/2, v[1] + v[3]/2, v[0] + v[2]/2
		}
		return math.Min(v[0], v[2]), math.Min(v[1], v[3]), math.Max(v[0], v[2]), math.Max(v[1], v[3])
	}
	iou := func(b, i, j int) float64 {
		ay1, ax1, ay2, ax2 := corners(b, i)
		by1, bx1, by2, bx2 := corners(b, j)
		ih := math.Max(0, math.Min(ay2, by2)-math.Max(ay1, by1))
		iw := math.Max(0, math.Min(ax2, bx2)-math.Max(ax1, bx1))
		inter := ih * iw
		union := (ay2-ay1)*(ax2-ax1) + (by2-by1)*(bx2-bx1) - inter
		if union <= 0 {
			return 0
		}
		return inter / union
	}
	for b := 0; b < batches; b++ {
		for c := 0; c < classes; c++ {
			s := scores[(b*classes+c)*n:][:n]
			var cand, kept []int
			for i := range s {
				if !scoreGiven || s[i] > scoreThreshold {
					cand = append(cand, i)
				}
			}
			sort.SliceStable(cand, func(x, y int) bool { return s[cand[x]] > s[cand[y]] })
			for _, i := range cand {
				if int64(len(kept)) >= maxPerClass {
					break
				}
				ok := true
				for _, j := range kept {
					ok = ok && !(iou(b, i, j) > iouThreshold)
				}
				if ok {
					kept = append(kept, i)
					out = append(out, [3]int64{int64(b), int64(c), int64(i)})
				}
			}
		}
	}
	return out
}

// TestNonMaxSuppression compares the selection with nmsReference on
// random boxes: clustered and spread, shifted apart by class as batched
// detectors do, in both box formats, with zero-area and repeated boxes,
// and thresholds of zero, negative and in between.
func TestNonMaxSuppression(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cases := []struct {
		name            string
		n, classes      int
		spread, size    float64
		iou, score      float64
		max             int64
		center, offsets bool
	}{
		{"clustered", 300, 2, 50, 20, 0.5, 0.1, math.MaxInt64, false, false},
		{"spread", 500, 1, 1000, 30, 0.3, 0, math.MaxInt64, false, false},
		{"class offsets", 600, 1, 100, 25, 0.45, 0.05, math.MaxInt64, false, true},
		{"center format", 200, 3, 60, 15, 0.5, 0.2, math.MaxInt64, true, false},
		{"zero threshold", 200, 1, 80, 10, 0, 0, math.MaxInt64, false, false},
		{"negative threshold", 50, 1, 80, 10, -0.1, 0, math.MaxInt64, false, false},
		{"max per class", 400, 2, 200, 20, 0.7, 0, 17, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			boxes := make([]float64, 4*c.n)
			for i := 0; i < c.n; i++ {
				x, y := r.Float64()*c.spread, r.Float64()*c.spread
				if c.offsets {
					off := float64(i%7) * (c.spread + 2*c.size)
					x += off
				}
				w, h := r.Float64()*c.size, r.Float64()*c.size
				switch i % 23 {
				case 0:
					w = 0 // no area
				case 1:
					copy(boxes[4*i:], boxes[4*(i-1):4*i]) // a repeat
					continue
				}
				if c.center {
					boxes[4*i], boxes[4*i+1], boxes[4*i+2], boxes[4*i+3] = x, y, w, h
				} else if i%2 == 0 {
					boxes[4*i], boxes[4*i+1], boxes[4*i+2], boxes[4*i+3] = y, x, y+h, x+w
				} else {
					boxes[4*i], boxes[4*i+1], boxes[4*i+2], boxes[4*i+3] = y+h, x+w, y, x // corners swapped
				}
			}
			scores := make([]float64, c.classes*c.n)
			for i := range scores {
				scores[i] = math.Round(r.Float64()*50) / 50 // ties
			}
			got := NonMaxSuppression(boxes, scores, 1, c.classes, c.n, c.max, c.iou, c.score, true, c.center)
			want := nmsReference(boxes, scores, 1, c.classes, c.n, c.max, c.iou, c.score, true, c.center)
			if !slices.Equal(got, want) {
				t.Errorf("%d boxes selected, the reference selects %d", len(got), len(want))
			}
			if len(want) == 0 {
				t.Error("the case selects nothing")
			}
		})
	}
}
