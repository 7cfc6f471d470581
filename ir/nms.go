package ir

import (
	"fmt"
	"math"
	"sort"
)

// NonMaxSuppression selects boxes greedily by decreasing score, per batch
// and class, dropping any whose intersection over union with one already
// selected exceeds iouThreshold. boxes is [batches, n, 4] (corners
// y1,x1,y2,x2 in any order, or center x,y,w,h with center), scores
// [batches, classes, n]. It returns (batch, class, box) triples.
//
// The boxes selected so far are kept sorted by their left edge: a
// candidate is compared only with those whose horizontal extent can
// overlap its own (with an iouThreshold of zero or more, a box that does
// not overlap has an IoU of zero and suppresses nothing). Detectors that
// run one suppression over every class, each class's boxes shifted apart,
// so compare each box with its own class's.
func NonMaxSuppression(boxes, scores []float64, batches, classes, n int, maxPerClass int64, iouThreshold, scoreThreshold float64, scoreGiven, center bool) [][3]int64 {
	var out [][3]int64
	y1, x1, y2, x2, area := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	iou := func(i, j int) float64 {
		ih := math.Max(0, math.Min(y2[i], y2[j])-math.Max(y1[i], y1[j]))
		iw := math.Max(0, math.Min(x2[i], x2[j])-math.Max(x1[i], x1[j]))
		inter := ih * iw
		union := area[i] + area[j] - inter
		if union <= 0 {
			return 0
		}
		return inter / union
	}
	for b := 0; b < batches; b++ {
		for i := 0; i < n; i++ {
			v := boxes[(b*n+i)*4:]
			if center {
				xc, yc, w, h := v[0], v[1], v[2], v[3]
				y1[i], x1[i], y2[i], x2[i] = yc-h/2, xc-w/2, yc+h/2, xc+w/2
			} else {
				y1[i], x1[i], y2[i], x2[i] = math.Min(v[0], v[2]), math.Min(v[1], v[3]), math.Max(v[0], v[2]), math.Max(v[1], v[3])
			}
			area[i] = (y2[i] - y1[i]) * (x2[i] - x1[i])
		}
		for c := 0; c < classes; c++ {
			s := scores[(b*classes+c)*n:][:n]
			var cand []int
			for i := range s {
				if !scoreGiven || s[i] > scoreThreshold {
					cand = append(cand, i)
				}
			}
			sort.SliceStable(cand, func(x, y int) bool { return s[cand[x]] > s[cand[y]] })
			var kept []int   // in order of selection
			var byLeft []int // the same, by left edge
			wide := 0.0      // the widest kept box
			for _, i := range cand {
				if int64(len(kept)) >= maxPerClass {
					break
				}
				ok := true
				if iouThreshold < 0 {
					// Every box suppresses every other: compare all.
					for _, j := range kept {
						if iou(i, j) > iouThreshold {
							ok = false
							break
						}
					}
				} else {
					// Kept boxes that can overlap i start left of its
					// right edge and no further left than the widest's
					// width before its left edge.
					lo := sort.Search(len(byLeft), func(k int) bool { return x1[byLeft[k]] >= x1[i]-wide })
					for _, j := range byLeft[lo:] {
						if x1[j] > x2[i] {
							break
						}
						if iou(i, j) > iouThreshold {
							ok = false
							break
						}
					}
				}
				if ok {
					kept = append(kept, i)
					at := sort.Search(len(byLeft), func(k int) bool { return x1[byLeft[k]] > x1[i] })
					byLeft = append(byLeft, 0)
					copy(byLeft[at+1:], byLeft[at:])
					byLeft[at] = i
					wide = math.Max(wide, x2[i]-x1[i])
					out = append(out, [3]int64{int64(b), int64(c), int64(i)})
				}
			}
		}
	}
	return out
}

// NMSArgs reads the inputs of a NonMaxSuppression node whose inputs are
// all constants and runs it.
func NMSArgs(g *Graph, n *Node) ([][3]int64, error) {
	boxes, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	scores, err := input(g, n, 1)
	if err != nil {
		return nil, err
	}
	if boxes.Shape.Rank() != 3 || boxes.Shape[2] != 4 || scores.Shape.Rank() != 3 || scores.Shape[0] != boxes.Shape[0] || scores.Shape[2] != boxes.Shape[1] {
		return nil, fmt.Errorf("boxes %v and scores %v must be [B,N,4] and [B,C,N]", boxes.Shape, scores.Shape)
	}
	for i := range n.Inputs {
		if t, err := optInput(g, n, i); err != nil {
			return nil, err
		} else if t != nil && !t.IsConst() {
			return nil, NeedValue("input", t.Name)
		}
	}
	bv, err := boxes.Float64s()
	if err != nil {
		return nil, err
	}
	sv, err := scores.Float64s()
	if err != nil {
		return nil, err
	}
	scalar := func(i int) (float64, bool, error) {
		t, err := optInput(g, n, i)
		if err != nil || t == nil || t.Shape.Elements() == 0 {
			return 0, false, err
		}
		if t.DType.IsInt() {
			v, err := t.Int64s()
			if err != nil {
				return 0, false, err
			}
			return float64(v[0]), true, nil
		}
		v, err := t.Float64s()
		if err != nil {
			return 0, false, err
		}
		return v[0], true, nil
	}
	// max_output_boxes_per_class is read as an integer: exporters pass
	// the largest int64 for "no limit", which a float64 would round past.
	maxOut := int64(0)
	if t, err := optInput(g, n, 2); err != nil {
		return nil, err
	} else if t != nil && t.Shape.Elements() > 0 {
		if !t.DType.IsInt() {
			return nil, fmt.Errorf("max_output_boxes_per_class %q is %s, want int64", t.Name, t.DType)
		}
		v, err := t.Int64s()
		if err != nil {
			return nil, err
		}
		maxOut = v[0]
	}
	iou, _, err := scalar(3)
	if err != nil {
		return nil, err
	}
	st, given, err := scalar(4)
	if err != nil {
		return nil, err
	}
	s := scores.Shape
	return NonMaxSuppression(bv, sv, int(s[0]), int(s[1]), int(s[2]), maxOut, iou, st, given, n.Attrs.Int("center_point_box", 0) != 0), nil
}

func init() {
	register(func(g *Graph, n *Node) ([]Type, error) {
		if err := inputCount(n, 2, 5); err != nil {
			return nil, err
		}
		sel, err := NMSArgs(g, n)
		if err != nil {
			return nil, err
		}
		return same(Int64, Shape{int64(len(sel)), 3}), nil
	}, "NonMaxSuppression")
}
