//go:build !noasm

package cpu

import "golang.org/x/sys/cpu"

// useAVX512Kernel selects the AVX-512 micro-kernel (sgemm12x32) for the
// 2×2 panel blocks of C that it covers whole; the rest of C goes through
// the 6×16 kernel that useAsmKernel chooses. It is a variable so that tests
// can force the AVX2 and pure-Go kernels on machines that have AVX-512.
// cpu.X86.HasAVX512F is set only when the operating system saves the zmm
// state as well.
var useAVX512Kernel = useAsmKernel && cpu.X86.HasAVX512F

// sgemm12x32 computes the 12×32 product of kb steps of two consecutive
// packed A panels (6 floats per step each: rows 0-5 at a0, rows 6-11 at
// a1) and two B panels (16 floats per step each: columns 0-15 at b0,
// columns 16-31 at b1, each moving bstep floats a step: 16 for packed
// panels, the row length for 32 columns of an unpacked row-major B, b1
// then being b0+16) and writes it to the 12 rows of C at c, ldc floats
// apart. With mode 0 it stores product + rb[i] + cb[j]
// (i < 12, j < 32), where a nil rb or cb counts as zeros; with mode 1 it
// adds the product to C and ignores rb and cb. A non-nil res (rows ldc
// floats apart) is added and a non-nil lim clamps what it writes, as
// sgemm6x16 does. kb may be 0. It needs AVX-512F.
//
// While it runs it asks for the next data to be brought into the L2
// cache, spread over its steps: every four steps (for the first kb/4·4),
// until pfn times, two 64-byte lines from pf0 and two from pf1, each
// pointer then moving on by pfstep bytes (128 for what follows them, or
// a row's length to walk rows). These are hints: the addresses need not
// be valid.
//
// Reading an unpacked B whose rows lie a multiple of 256 bytes apart (the
// planes of a 56² image) for at least 128 steps, it also brings
// B's rows into L1 itself, eight steps ahead: every row's two lines fall
// into the same half of L1's sets, so a deep slice does not stay there
// from one micro-tile to the next, and the hardware does not fetch rows
// that far apart ahead.
//
// With a2 not nil it computes a thirteenth row too, A's row 12 read from
// a2 (6 floats a step, like a0's row 0), into C's row 12 (and rb[12],
// res's row 12): the last one-row panel of a 49-row product rides with
// the pair before it.
//
//go:noescape
func sgemm12x32(kb int, a0, a1, b0, b1 *float32, bstep int, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, pf0, pf1 *float32, pfn int, a2 *float32, pfstep int)

// sgemm6x32 is sgemm12x32 for one A panel (6 floats per step at a): it
// computes the 6×32 product of kb steps of a and the B panels at b0, b1
// (bstep floats a step) and writes it to the 6 rows of C at c as sgemm12x32
// does (rb has 6 values, cb 32). Its hints are four lines from each of pf0
// and pf1 every four steps, pfn times. With a1 not nil it computes rows 6
// and 7 too, the first two rows of the A panel at a1, into C's rows 6 and 7
// (and rb's, res's): the last eight rows of a product of 12n+8 rows, which
// a pair of panels would compute twelve of. It needs AVX-512F.
//
//go:noescape
func sgemm6x32(kb int, a, b0, b1 *float32, bstep int, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, pf0, pf1 *float32, pfn int, a1 *float32)

// sgemm12x16 is sgemm12x32 for one B panel (16 floats per step at b): it
// computes the 12×16 product of kb steps of the A panels at a0, a1 and b
// and writes it to the 12 rows of C at c as sgemm12x32 does (rb has 12
// values, cb 16). Its hints are sgemm12x32's. It needs AVX-512F.
//
//go:noescape
func sgemm12x16(kb int, a0, a1, b, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, pf0, pf1 *float32, pfn int)

// sgemm6x64 computes the 6×64 product of kb steps of a packed A panel (6
// floats per step at a) and a quad of B panels packed side by side (64
// floats per step at b: see gemm.bQuads) and writes it to the 6 rows of C
// at c, ldc floats apart, as sgemm12x32 does (rb has 6 values, cb 64,
// res's rows are ldc floats apart). While it runs it asks for pfn times
// four 64-byte lines from pf on, every four steps, to be brought into L2.
// With lda not 0, A is not packed: its six rows lie lda floats apart from
// a on, one float a step each. kb may be 0. It needs AVX-512F.
//
//go:noescape
func sgemm6x64(kb int, a, b *float32, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, pf *float32, pfn int, lda int)

// fmaPeakLoop512 runs n iterations of 24 16-lane fused multiply-adds
// spread over 12 independent zmm accumulators: 768·n floating-point
// operations, no memory traffic. It needs AVX-512F.
//
//go:noescape
func fmaPeakLoop512(n int)

// pointwiseBlocked12x32 computes a 12×32 tile of a 1×1 convolution's output
// with its rows twelve positions and its columns 32 output channels: kb16
// blocks of sixteen input channels of A (blocked: NCHW16c in place, a
// block's twelve positions 64 bytes apart and the next block akb bytes
// further; packed, mode bit pointwiseBlockedPacked: each channel's twelve
// positions side by side, blocks 768 bytes apart) times B, the transposed
// weights packed 32 channels a step. It writes row i to C in NCHW16c:
// channels 0-15 at c + 64·i bytes, 16-31 chalf bytes further, after adding
// what C holds (mode bit pointwiseBlockedAcc), the 32 biases at bias and
// the tile at res (C's layout), and clamping to lim, where those are not
// nil. Where pf is not nil and A is blocked, it asks for the next call's B
// at pf, as many steps, to be brought into L2 as it goes (the weights of a
// panel the tile after will read from memory). It needs AVX-512F.
//
//go:noescape
func pointwiseBlocked12x32(kb16 int, a *float32, akb int, mode int, b *float32, c *float32, chalf int, bias, res, lim, pf *float32)

// pointwiseBlocked13x32 is pointwiseBlocked12x32 for thirteen positions of
// a blocked A read in place (no packed form): the last position of a plane
// of 12n+1 rides with the twelve before it. It needs AVX-512F.
//
//go:noescape
func pointwiseBlocked13x32(kb16 int, a *float32, akb int, b *float32, c *float32, chalf int, bias, res, lim *float32)

// blockedWindows12x32 computes a 12×32 tile of a convolution of stride 2 from a
// padded input in planes: twelve output positions along a row by 32
// output channels, over k steps (input channel, kernel row, column):
// step s broadcasts the twelve values 8 bytes apart from a + offs[s]
// bytes and multiplies them into the 32 weights at b + 128·s bytes. It
// stores the tile to C in NCHW16c (channels 0-15 of position i at c +
// 64·i bytes, 16-31 chalf bytes further), with the biases at bias and
// the clamp lim where those are not nil. It needs AVX-512F.
//
//go:noescape
func blockedWindows12x32(k int, a *float32, offs *int, b *float32, c *float32, chalf int, bias, lim *float32)

// gather12 copies, for i < 12, the sixteen floats at src + offs[i] bytes
// to dst + 64·i bytes, or zeros where offs[i] < 0: a tile's twelve
// vectors of one k block of a gathered A. It needs AVX-512F.
//
//go:noescape
func gather12(dst, src *float32, offs *int)

// stemRows8x48 computes eight output channels by 48 positions of an output
// row of a convolution of stride 2 from an input split by the parity of
// its columns (stemRows): over k steps (input channel, kernel row,
// column), step s multiplies the 48 values from a + offs[s] bytes on by
// the eight weights at w + 32·s bytes, one broadcast per channel, into
// the channels' sums. It stores channel i's 48 values at c + i·ldc bytes,
// after adding bias[i] and clamping to lim where those are not nil (the
// GEMM kernels' store). It needs AVX-512F.
//
//go:noescape
func stemRows8x48(k int, a *float32, offs *int, w *float32, c *float32, ldc int, bias, lim *float32)

// stemRows8x16 is stemRows8x48 for 16 positions: the tiles of a row past
// its last whole 48.
//
//go:noescape
func stemRows8x16(k int, a *float32, offs *int, w *float32, c *float32, ldc int, bias, lim *float32)
