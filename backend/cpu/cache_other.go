//go:build !amd64 || noasm

package cpu

func dotRowsAVX2(s, q, k *float32, rows, stride, d int) { panic("dotRowsAVX2 without assembly") }

func weightRowsAVX2(o, p, v *float32, rows, stride, d int) {
	panic("weightRowsAVX2 without assembly")
}

func widenF16AVX2(dst *float32, src *uint16, n int) { panic("widenF16AVX2 without assembly") }
