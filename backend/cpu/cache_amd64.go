//go:build !noasm

package cpu

// dotRowsAVX2 sets s[j] = Σ_c q[c]·k[j·stride+c] for j < rows and c < d,
// a positive multiple of 8 (cache_amd64.s). It needs AVX2 and FMA.
//
//go:noescape
func dotRowsAVX2(s, q, k *float32, rows, stride, d int)

// weightRowsAVX2 sets o[c] = Σ_j p[j]·v[j·stride+c] for c < d, a positive
// multiple of 8, and j < rows (cache_amd64.s). It needs AVX2 and FMA.
//
//go:noescape
func weightRowsAVX2(o, p, v *float32, rows, stride, d int)

// widenF16AVX2 sets dst[i] to the f16 src[i] as float32, for n a positive
// multiple of 8 (cache_amd64.s). It needs F16C, which every CPU with
// AVX2 and FMA this package uses has.
//
//go:noescape
func widenF16AVX2(dst *float32, src *uint16, n int)
