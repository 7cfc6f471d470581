package cpu

import "math"

// im2col writes panel q of one group's im2col matrix, already in the packed
// B layout: for every kernel tap (row r = channel, kd, kh, kw) the gemmNR
// input values that the output pixels of the panel's columns read.
func (k *convKernel) im2col(dst, x []float32, q int) {
	d := dst[q*k.kdim*gemmNR:][:k.kdim*gemmNR]
	j0 := q * gemmNR
	cols := min(gemmNR, k.outSp-j0)
	if k.pointwise {
		for c := 0; c < k.cg; c++ {
			row := d[c*gemmNR:][:gemmNR]
			src := x[c*k.inSp+j0:]
			if cols == gemmNR {
				*(*[gemmNR]float32)(row) = *(*[gemmNR]float32)(src)
			} else {
				copy(row[:cols], src)
				clear(row[cols:])
			}
		}
		return
	}
	D, H, W := k.in[0], k.in[1], k.in[2]
	OH, OW := k.out[1], k.out[2]
	var id0, ih0, iw0 [gemmNR]int
	for jj := 0; jj < gemmNR; jj++ {
		if jj >= cols {
			id0[jj] = math.MinInt32 // never inside the input: reads as padding
			continue
		}
		j := j0 + jj
		ow, t := j%OW, j/OW
		oh, od := t%OH, t/OH
		id0[jj] = od*k.stride[0] - k.pad[0]
		ih0[jj] = oh*k.stride[1] - k.pad[1]
		iw0[jj] = ow*k.stride[2] - k.pad[2]
	}
	// With unit stride and all columns in one output row, each tap reads
	// gemmNR consecutive inputs.
	run := cols == gemmNR && k.stride[2] == 1 && j0%OW+gemmNR <= OW
	r := 0
	for c := 0; c < k.cg; c++ {
		xc := x[c*k.inSp:][:k.inSp]
		for kd := 0; kd < k.kern[0]; kd++ {
			dd := kd * k.dil[0]
			for kh := 0; kh < k.kern[1]; kh++ {
				dh := kh * k.dil[1]
				for kw := 0; kw < k.kern[2]; kw++ {
					dw := kw * k.dil[2]
					row := (*[gemmNR]float32)(d[r*gemmNR:])
					r++
					if run {
						id, ih, iw := id0[0]+dd, ih0[0]+dh, iw0[0]+dw
						if uint(id) < uint(D) && uint(ih) < uint(H) && iw >= 0 && iw+gemmNR <= W {
							*row = *(*[gemmNR]float32)(xc[(id*H+ih)*W+iw:])
							continue
						}
					}
					for jj := 0; jj < gemmNR; jj++ {
						id, ih, iw := id0[jj]+dd, ih0[jj]+dh, iw0[jj]+dw
						if uint(id) < uint(D) && uint(ih) < uint(H) && uint(iw) < uint(W) {
							row[jj] = xc[(id*H+ih)*W+iw]
						} else {
							row[jj] = 0
						}
					}
				}
			}
		}
	}
}

// depthwisePlane convolves one input channel plane x with one filter wt
// into one output plane y, row by row: every kernel tap adds a scaled,
// strided input row to the output row, over the output columns where that
// tap lands inside the input.
func (k *convKernel) depthwisePlane(y, x, wt []float32, bias float32) {
	D, H, W := k.in[0], k.in[1], k.in[2]
	OD, OH, OW := k.out[0], k.out[1], k.out[2]
	sw := k.stride[2]
	for od := 0; od < OD; od++ {
		for oh := 0; oh < OH; oh++ {
			orow := y[(od*OH+oh)*OW:][:OW]
			fill(orow, bias)
			for kd := 0; kd < k.kern[0]; kd++ {
				id := od*k.stride[0] - k.pad[0] + kd*k.dil[0]
				if uint(id) >= uint(D) {
					continue
				}
				for kh := 0; kh < k.kern[1]; kh++ {
					ih := oh*k.stride[1] - k.pad[1] + kh*k.dil[1]
					if uint(ih) >= uint(H) {
						continue
					}
					xrow := x[(id*H+ih)*W:][:W]
					taps := wt[(kd*k.kern[1]+kh)*k.kern[2]:][:k.kern[2]]
					for kw, wv := range taps {
						off := kw*k.dil[2] - k.pad[2]
						// Output columns ow with 0 <= ow·sw + off < W.
						lo := 0
						if off < 0 {
							lo = (-off + sw - 1) / sw
						}
						hi := 0
						if W-1-off >= 0 {
							hi = min((W-1-off)/sw+1, OW)
						}
						if lo >= hi {
							continue
						}
						if sw == 1 {
							axpy(orow[lo:hi], xrow[lo+off:hi+off], wv)
						} else {
							o := orow[lo:hi]
							for i := range o {
								o[i] += wv * xrow[(lo+i)*sw+off]
							}
						}
					}
				}
			}
		}
	}
}

// axpy adds a·x to y.
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

// col2im sets one output channel plane of a transposed convolution: the
// bias plus, for every kernel tap, its column-matrix row scattered to the
// output positions i·stride − pad + tap·dilation that fall inside.
func (k *convTransposeKernel) col2im(y, col []float32, bias float32) {
	fill(y, bias)
	D, H, W := k.in[0], k.in[1], k.in[2]
	OD, OH, OW := k.out[0], k.out[1], k.out[2]
	sw := k.stride[2]
	tap := 0
	for kd := 0; kd < k.kern[0]; kd++ {
		for kh := 0; kh < k.kern[1]; kh++ {
			for kw := 0; kw < k.kern[2]; kw++ {
				row := col[tap*k.inSp:][:k.inSp]
				tap++
				off := kw*k.dil[2] - k.pad[2]
				// Input columns iw with 0 <= iw·sw + off < OW.
				lo := 0
				if off < 0 {
					lo = (-off + sw - 1) / sw
				}
				hi := 0
				if OW-1-off >= 0 {
					hi = min((OW-1-off)/sw+1, W)
				}
				if lo >= hi {
					continue
				}
				for id := 0; id < D; id++ {
					od := id*k.stride[0] - k.pad[0] + kd*k.dil[0]
					if uint(od) >= uint(OD) {
						continue
					}
					for ih := 0; ih < H; ih++ {
						oh := ih*k.stride[1] - k.pad[1] + kh*k.dil[1]
						if uint(oh) >= uint(OH) {
							continue
						}
						src := row[(id*H+ih)*W:][:W]
						dst := y[(od*OH+oh)*OW:][:OW]
						if sw == 1 {
							s, d := src[lo:hi], dst[lo+off:hi+off]
							for i, v := range s {
								d[i] += v
							}
							continue
						}
						for iw := lo; iw < hi; iw++ {
							dst[iw*sw+off] += src[iw]
						}
					}
				}
			}
		}
	}
}
