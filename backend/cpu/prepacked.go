package cpu

// prepackedKernel is implemented by kernels that copy some constant inputs into
// a layout of their own when they are built and never read those inputs
// again: a runtime need not keep such an input's bytes resident.
type prepackedKernel interface {
	// Prepacked reports whether input i was copied at build time.
	Prepacked(i int) bool
	// PackedBytes is the size of the kernel's copies.
	PackedBytes() int64
}

// Prepacked reports whether input i of the product is held packed.
func (k *matmulKernel) Prepacked(i int) bool {
	switch i {
	case 0:
		return k.aPre != nil
	case 1:
		return k.bPre != nil
	}
	return false
}

// Prepacked reports whether input i, the weights, is held packed (as
// the product's A, transposed as its B, or transformed for Winograd).
func (k *convKernel) Prepacked(i int) bool {
	return i == 1 && (k.wPre != nil || k.wT != nil || k.wg != nil || k.blk != nil)
}

// PackedBytes is the size of the packed operands.
func (k *matmulKernel) PackedBytes() int64 { return 4 * int64(len(k.aPre)+len(k.bPre)) }

// PackedBytes is the size of the packed weights, with the channel-blocked
// depthwise path's interleaved copy (which the weights stay beside: other
// paths of the kernel read them).
func (k *convKernel) PackedBytes() int64 {
	n := len(k.wPre) + len(k.wT) + len(k.depthwiseChannelsW)
	if k.blk != nil {
		n += len(k.blk.wT)
	}
	if k.wg != nil {
		n += len(k.wg.u) + len(k.wg.ut)
	}
	return 4 * int64(n)
}

// byteReader is implemented by kernels that only copy some inputs byte
// by byte: such an input may sit at any address, so a runtime can hand
// them a constant straight from a mapped file however the file aligns it.
type byteReader interface {
	// ReadsBytes reports whether input i is only copied byte by byte.
	ReadsBytes(i int) bool
}

// ReadsBytes reports whether input i is the gathered data, which Gather
// copies in blocks of bytes.
func (k *gatherKernel) ReadsBytes(i int) bool { return i == 0 }
