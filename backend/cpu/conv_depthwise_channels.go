package cpu

import (
	"unsafe"

	"github.com/berth-ml/berth/ir"
)

// Channel-blocked depthwise convolution for small planes.
//
// Planes at most sixteen columns wide of unit stride run as row vectors
// (conv_depthwise_rows.go); the rest of the small ones run here. On a plane
// of a few dozen outputs the band kernel (dwBandPlane) spends most of its
// time setting the plane up, and its vectors run along a row of seven or
// fourteen outputs. Here sixteen channels go together: their input planes
// are interleaved into one zero-padded block (sixteen floats a position) in
// the worker's scratch, each output position is one zmm register that sums
// the taps with the sixteen channels' weights (depthwiseChannels16), and
// the results are de-interleaved into the output planes. The taps are added
// in the band kernel's order, starting from the bias, so the bits are the
// same.

// depthwiseChannelsMaxOut is the largest output plane, in positions, that
// runs channel-blocked; depthwiseChannelsMaxOut5 that for 5×5 (or larger)
// filters of unit stride, whose taps pay for the transposes on larger
// planes too.
const (
	depthwiseChannelsMaxOut  = 400
	depthwiseChannelsMaxOut5 = 1024
)

// depthwiseChannelsLanes is the number of channels that go together.
const depthwiseChannelsLanes = 16

// depthwiseChannelsFits reports whether k's planes may run channel-blocked:
// a dwFast geometry with one output channel per group and small output
// planes.
func (k *convKernel) depthwiseChannelsFits() bool {
	limit := depthwiseChannelsMaxOut
	if k.kvol >= 25 && k.stride == [3]int{1, 1, 1} {
		limit = depthwiseChannelsMaxOut5
	}
	return k.depthwise && k.mg == 1 && k.dwFast() && k.out[1]*k.out[2] <= limit && k.out[1]*k.out[2] > 0
}

// depthwiseChannelsPadded is the input extent, in rows and columns, that
// the outputs of one plane read, padding included.
func (k *convKernel) depthwiseChannelsPadded() (hp, wp int) {
	return (k.out[1]-1)*k.stride[1] + k.kern[1], (k.out[2]-1)*k.stride[2] + k.kern[2]
}

// depthwiseChannelsFloats is the scratch, in floats, that one worker needs
// for a group of channels: the interleaved input, the interleaved output
// (rows up to wp positions apart), the weights and the biases.
func depthwiseChannelsFloats(k *convKernel) int {
	hp, wp := k.depthwiseChannelsPadded()
	return depthwiseChannelsLanes * (hp*wp + k.out[1]*max(k.out[2], wp) + k.kvol + 1)
}

// depthwiseChannelsTables sets k.depthwiseChannelsIn and
// k.depthwiseChannelsOut: where each input position's sixteen lanes go in
// the padded block (−1 outside it: row q/W+ph, column q%W+pw) and where
// each output position's come from in the output block (rows wp apart with
// unit strides, else OW apart).
func (k *convKernel) depthwiseChannelsTables() {
	W, OW := k.in[2], k.out[2]
	hp, wp := k.depthwiseChannelsPadded()
	ph, pw := k.pad[1], k.pad[2]
	k.depthwiseChannelsIn = make([]int32, k.inSp)
	for q := range k.depthwiseChannelsIn {
		k.depthwiseChannelsIn[q] = -1
		if r, c := q/W+ph, q%W+pw; r < hp && c < wp {
			k.depthwiseChannelsIn[q] = int32((r*wp + c) * depthwiseChannelsLanes)
		}
	}
	pitch := OW
	if k.stride[1] == 1 && k.stride[2] == 1 {
		pitch = wp
	}
	k.depthwiseChannelsOut = make([]int32, k.outSp)
	for p := range k.depthwiseChannelsOut {
		k.depthwiseChannelsOut[p] = int32((p/OW*pitch + p%OW) * depthwiseChannelsLanes)
	}
}

// depthwiseChannelsWeights sets k.depthwiseChannelsW from constant weights
// and bias (b may be nil): each group of sixteen channels interleaved as
// depthwiseChannelsInterleave lays it out, (kvol+1)·16 floats a group.
func (k *convKernel) depthwiseChannelsWeights(w f32src, b *ir.Tensor) {
	const L = depthwiseChannelsLanes
	per := (k.kvol + 1) * L
	var bs f32src
	var bias []byte
	if b != nil {
		bs, bias = constSrc(b), b.Data
	}
	k.depthwiseChannelsW = k.weights.packedWith(w.bytes(), bias, "depthwise sixteen channels", [8]int{k.m, k.kvol, boolInt(b != nil)}, ceilDiv(k.m, L)*per, func(depthwiseChannelsW []float32) {
		for c0 := 0; c0 < k.m; c0 += L {
			k.depthwiseChannelsInterleave(depthwiseChannelsW[c0/L*per:][:per], w, bs, b != nil, c0, min(L, k.m-c0))
		}
	})
}

// depthwiseChannelsInterleave writes the weights and biases of channels
// [c0, c0+cnt) (cnt ≤ 16) to g as depthwiseChannels16 reads them: tap t of
// channel c0+l at t·16 + l, then the channels' biases, zeros for the lanes
// past cnt and for an absent bias.
func (k *convKernel) depthwiseChannelsInterleave(g []float32, w, b f32src, hasBias bool, c0, cnt int) {
	const L = depthwiseChannelsLanes
	clear(g)
	for l := range cnt {
		for t := range k.kvol {
			g[t*L+l] = w.at((c0+l)*k.kvol + t)
		}
		if hasBias {
			g[k.kvol*L+l] = b.at(c0 + l)
		}
	}
}

// depthwiseChannelsGroups is the number of groups of channels of one run.
func (k *convKernel) depthwiseChannelsGroups() int {
	return k.nb * ceilDiv(k.m, depthwiseChannelsLanes)
}

// depthwiseChannelsGroup computes output channels [c0, c0+16) of image n
// (fewer at the end) in buf (depthwiseChannelsFloats of it). fresh says
// buf's padding may hold anything: a worker's first group of a run zeroes
// it, and the groups after it leave it as it is (they write only inside
// it).
func (k *convKernel) depthwiseChannelsGroup(x, y, wt, bias, buf []float32, n, c0 int, fresh bool) {
	W := k.in[2]
	OH, OW := k.out[1], k.out[2]
	KH, KW := k.kern[1], k.kern[2]
	ph, pw := k.pad[1], k.pad[2]
	hp, wp := k.depthwiseChannelsPadded()
	cnt := min(depthwiseChannelsLanes, k.m-c0)
	const L = depthwiseChannelsLanes
	xb := buf[:L*hp*wp]
	ob := buf[len(xb):][:L*OH*max(OW, wp)]
	// Zero the padding around the input's place in the block; the
	// transposes below fill the rest.
	if fresh {
		r1, c1 := min(hp, ph+k.in[1]), min(wp, pw+W)
		clear(xb[:L*wp*min(ph, hp)])
		clear(xb[L*wp*r1:])
		for r := min(ph, hp); r < r1; r++ {
			row := xb[L*wp*r:][:L*wp]
			clear(row[:L*min(pw, wp)])
			clear(row[L*c1:])
		}
	}
	// Input position q of the planes (row q/W, column q%W) goes to padded
	// row q/W+ph, column q%W+pw, where those lie inside the block.
	var zeros, sink [L]float32
	var src, dst [L]*float32
	for i := range src {
		src[i] = &zeros[0]
	}
	for l := 0; l < cnt; l++ {
		src[l] = &x[(n*k.c+c0+l)*k.inSp]
	}
	base := src
	for q0 := 0; q0 < k.inSp; q0 += L {
		m := min(L, k.inSp-q0)
		for j, off := range k.depthwiseChannelsIn[q0:][:m] {
			dst[j] = &sink[0]
			if off >= 0 {
				dst[j] = &xb[off]
			}
		}
		for j := m; j < L; j++ {
			dst[j] = &sink[0]
		}
		for l := 0; l < cnt; l++ {
			src[l] = (*float32)(unsafe.Add(unsafe.Pointer(base[l]), 4*q0))
		}
		tr16(&dst, &src, 1<<m-1, 1<<L-1)
	}
	// The group's weights and biases: interleaved at build when they
	// are constants, else here, after the output block.
	var g []float32
	if k.depthwiseChannelsW != nil {
		g = k.depthwiseChannelsW[c0/L*(k.kvol+1)*L:][:(k.kvol+1)*L]
	} else {
		g = buf[len(xb)+len(ob):][:(k.kvol+1)*L]
		k.depthwiseChannelsInterleave(g, f32src{f: wt}, f32src{f: bias}, bias != nil, c0, cnt)
	}
	wb, bb := g[:k.kvol*L], g[k.kvol*L:]
	var offs [dwMaxTaps]int
	for r := 0; r < KH; r++ {
		for c := 0; c < KW; c++ {
			offs[r*KW+c] = 4 * L * (r*wp + c)
		}
	}
	// Every tap of row oh reads inside xb: the last position's last tap
	// is at row (OH−1)·sh+KH−1 < hp, column (OW−1)·sw+KW−1 < wp.
	sh, sw := k.stride[1], k.stride[2]
	if sh == 1 && sw == 1 {
		// Unit strides: output (oh, ow) reads from position oh·wp+ow
		// on, so the rows run as one, wp apart, the wp−OW positions
		// between them computed and discarded (depthwiseChannelsTables).
		depthwiseChannels16(&ob[0], &xb[0], &wb[0], &bb[0], &offs[0], KH*KW, (OH-1)*wp+OW, 1)
	} else {
		for oh := 0; oh < OH; oh++ {
			depthwiseChannels16(&ob[oh*OW*L], &xb[oh*sh*wp*L], &wb[0], &bb[0], &offs[0], KH*KW, OW, sw)
		}
	}
	// Output position p of channel l is lane l of ob's position p.
	for i := range src {
		src[i] = &zeros[0]
	}
	for j := range dst {
		dst[j] = &sink[0]
	}
	for l := 0; l < cnt; l++ {
		base[l] = &y[(n*k.m+c0+l)*k.outSp]
	}
	for p0 := 0; p0 < k.outSp; p0 += L {
		m := min(L, k.outSp-p0)
		for i, off := range k.depthwiseChannelsOut[p0:][:m] {
			src[i] = &ob[off]
		}
		for i := m; i < L; i++ {
			src[i] = &zeros[0]
		}
		for l := 0; l < cnt; l++ {
			dst[l] = (*float32)(unsafe.Add(unsafe.Pointer(base[l]), 4*p0))
		}
		tr16(&dst, &src, 1<<L-1, 1<<m-1)
	}
}
