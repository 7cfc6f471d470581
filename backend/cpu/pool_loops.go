package cpu

import "math"

// Pooling loops over one channel plane.

func maxPlanes[T number](k *poolKernel, y []T, ind []int64, x []T, lo, hi int) {
	for p := lo; p < hi; p++ {
		var ic []int64
		if ind != nil {
			ic = ind[p*k.outSp:][:k.outSp]
		}
		maxPlane(k, y[p*k.outSp:][:k.outSp], ic, x[p*k.inSp:][:k.inSp], int64(p*k.inSp))
	}
}

// maxPlane max-pools one channel plane; a NaN in a window wins, and a
// window with no element inside the input yields the type's lowest value
// (-MaxFloat32 for float32).
func maxPlane[T number](k *poolKernel, y []T, ind []int64, x []T, base int64) {
	H, W := k.in[1], k.in[2]
	lowest := lowestOf[T]()
	if ind == nil {
		maxPlaneValues(k, y, x, lowest)
		return
	}
	i := 0
	for od := 0; od < k.out[0]; od++ {
		for oh := 0; oh < k.out[1]; oh++ {
			for ow := 0; ow < k.out[2]; ow++ {
				best, at := lowest, -1
				for td := k.tlo[0][od]; td < k.thi[0][od]; td++ {
					id := od*k.stride[0] - k.pad[0] + int(td)*k.dil[0]
					for th := k.tlo[1][oh]; th < k.thi[1][oh]; th++ {
						ih := oh*k.stride[1] - k.pad[1] + int(th)*k.dil[1]
						row := x[(id*H+ih)*W:][:W]
						for tw := k.tlo[2][ow]; tw < k.thi[2][ow]; tw++ {
							iw := ow*k.stride[2] - k.pad[2] + int(tw)*k.dil[2]
							if v := row[iw]; v > best || (v != v && best == best) || at < 0 {
								best, at = v, (id*H+ih)*W+iw
							}
						}
					}
				}
				y[i] = best
				if ind != nil {
					ind[i] = base + int64(max(at, 0))
					if k.colMajor && at >= 0 {
						iw, ih, id := at%W, at/W%H, at/(W*H)
						ind[i] = base + int64((iw*H+ih)*k.in[0]+id)
					}
				}
				i++
			}
		}
	}
}

// maxPlaneValues is maxPlane without indices: each window's first value,
// then the builtin max of it and the others, which selects without a
// branch (a branch per element mispredicts on random data) and lets a NaN
// win. Of +0 and −0 in one window it keeps +0.
func maxPlaneValues[T number](k *poolKernel, y, x []T, lowest T) {
	H, W := k.in[1], k.in[2]
	i := 0
	for od := 0; od < k.out[0]; od++ {
		for oh := 0; oh < k.out[1]; oh++ {
			for ow := 0; ow < k.out[2]; ow++ {
				best, seen := lowest, false
				w0, w1 := int(k.tlo[2][ow]), int(k.thi[2][ow])
				for td := k.tlo[0][od]; td < k.thi[0][od]; td++ {
					id := od*k.stride[0] - k.pad[0] + int(td)*k.dil[0]
					for th := k.tlo[1][oh]; th < k.thi[1][oh]; th++ {
						ih := oh*k.stride[1] - k.pad[1] + int(th)*k.dil[1]
						row := x[(id*H+ih)*W:][:W]
						iw0 := ow*k.stride[2] - k.pad[2]
						for tw := w0; tw < w1; tw++ {
							v := row[iw0+tw*k.dil[2]]
							if !seen {
								best, seen = v, true
								continue
							}
							best = max(best, v)
						}
					}
				}
				y[i] = best
				i++
			}
		}
	}
}

// maxRowBuf is the widest input row maxPlaneRows takes.
const maxRowBuf = 1024

// rowsFit reports whether maxPlaneRows takes k's planes: two spatial
// dimensions (or one), no dilation, rows of at most maxRowBuf values.
func (k *poolKernel) rowsFit() bool {
	return k.in[0] == 1 && k.out[0] == 1 && k.dil[1] == 1 && k.dil[2] == 1 && k.in[2] <= maxRowBuf
}

// maxPlaneRows is maxPlaneValues for float32 planes that rowsFit: for each
// output row it takes the maximum of the window's input rows column by
// column, then of each window's columns of that. The builtin max is
// commutative and associative on float32 (a NaN wins, +0 beats −0), so
// the order changes no bit of the result; the tight loops do the work of
// the window walk at a fraction of its cost.
func maxPlaneRows(k *poolKernel, y, x []float32) {
	W, OW := k.in[2], k.out[2]
	KW, sw, pw := k.kern[2], k.stride[2], k.pad[2]
	var buf, wbuf [maxRowBuf]float32
	v := buf[:W]
	// wv[i] is the maximum of v[i : i+KW], for the windows that lie
	// inside the row.
	wv := wbuf[:max(0, min(W, W-KW+1))]
	// Outputs [full0, full1) have their whole window inside the row; with
	// stride 2 on AVX-512 they are every other value of wv, copied in one
	// pass (evenCols).
	full0, full1 := 0, 0
	if sw == 2 && dw512 {
		for full0 < OW && (k.tlo[2][full0] != 0 || int(k.thi[2][full0]) != KW) {
			full0++
		}
		full1 = full0
		for full1 < OW && k.tlo[2][full1] == 0 && int(k.thi[2][full1]) == KW {
			full1++
		}
	}
	for oh := 0; oh < k.out[1]; oh++ {
		yr := y[oh*OW:][:OW]
		t0, t1 := int(k.tlo[1][oh]), int(k.thi[1][oh])
		if t0 >= t1 {
			fill(yr, float32(-math.MaxFloat32))
			continue
		}
		ih := oh*k.stride[1] - k.pad[1]
		copy(v, x[(ih+t0)*W:][:W])
		for t := t0 + 1; t < t1; t++ {
			maxInto(v, x[(ih+t)*W:][:W])
		}
		if len(wv) > 0 {
			copy(wv, v)
			for t := 1; t < KW; t++ {
				maxInto(wv, v[t:][:len(wv)])
			}
		}
		if full1 > full0 {
			evenCols(&yr[full0], &wv[full0*2-pw], full1-full0, 1, 0, 0)
		}
		for ow := 0; ow < OW; ow++ {
			if ow == full0 && full1 > full0 {
				ow = full1 - 1
				continue
			}
			w0, w1 := int(k.tlo[2][ow]), int(k.thi[2][ow])
			if w0 >= w1 {
				yr[ow] = -math.MaxFloat32
				continue
			}
			iw := ow*sw - pw
			if w0 == 0 && w1 == KW {
				yr[ow] = wv[iw]
				continue
			}
			best := v[iw+w0]
			for _, a := range v[iw+w0+1 : iw+w1] {
				best = max(best, a)
			}
			yr[ow] = best
		}
	}
}

// maxInto sets d[i] = max(d[i], s[i]) (the builtin max), on the AVX2
// kernel where it runs.
func maxInto(d, s []float32) {
	s = s[:len(d)]
	n := 0
	if clampAsm {
		maxIntoAVX2(d, s)
		n = len(d) &^ 7
	}
	for i, a := range s[n:] {
		d[n+i] = max(d[n+i], a)
	}
}

// lowestOf is the most negative finite value of T.
func lowestOf[T number]() T {
	var z T
	var v any
	switch any(z).(type) {
	case float32:
		v = float32(-math.MaxFloat32)
	case int8:
		v = int8(math.MinInt8)
	default:
		return z
	}
	return v.(T)
}

func (k *poolKernel) avgPlane(y, x []float32) {
	H, W := k.in[1], k.in[2]
	i := 0
	for od := 0; od < k.out[0]; od++ {
		for oh := 0; oh < k.out[1]; oh++ {
			for ow := 0; ow < k.out[2]; ow++ {
				var sum float64
				for td := k.tlo[0][od]; td < k.thi[0][od]; td++ {
					id := od*k.stride[0] - k.pad[0] + int(td)*k.dil[0]
					for th := k.tlo[1][oh]; th < k.thi[1][oh]; th++ {
						ih := oh*k.stride[1] - k.pad[1] + int(th)*k.dil[1]
						row := x[(id*H+ih)*W:][:W]
						for tw := k.tlo[2][ow]; tw < k.thi[2][ow]; tw++ {
							sum += float64(row[ow*k.stride[2]-k.pad[2]+int(tw)*k.dil[2]])
						}
					}
				}
				var n int32
				if k.includePad {
					n = k.padCount[0][od] * k.padCount[1][oh] * k.padCount[2][ow]
				} else {
					n = (k.thi[0][od] - k.tlo[0][od]) * (k.thi[1][oh] - k.tlo[1][oh]) * (k.thi[2][ow] - k.tlo[2][ow])
				}
				if n > 0 {
					y[i] = float32(sum / float64(n))
				} else {
					y[i] = 0
				}
				i++
			}
		}
	}
}

// sum64 adds float32 values in float64.
func sum64(x []float32) float64 {
	var s0, s1, s2, s3 float64
	for len(x) >= 4 {
		s0 += float64(x[0])
		s1 += float64(x[1])
		s2 += float64(x[2])
		s3 += float64(x[3])
		x = x[4:]
	}
	for _, v := range x {
		s0 += float64(v)
	}
	return (s0 + s1) + (s2 + s3)
}
