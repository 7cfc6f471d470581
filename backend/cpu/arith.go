package cpu

// Float32 Add, Sub, Mul and Div on whole vectors: Go does not vectorise
// loops, and these run over every element of bias adds, residuals and the
// GELU chains. Each vector instruction rounds every lane as the scalar
// operation does, so the results are the same bit for bit.

// Operators of arithAVX2.
const (
	arithAdd = iota
	arithSub
	arithMul
	arithDiv
)

// arithF32Loop returns the binFn of op on float32: the assembly kernel
// for whole vectors, then the Go loop for the rest.
func arithF32Loop(op int) binFn[float32, float32] {
	var tail binFn[float32, float32]
	switch op {
	case arithAdd:
		tail = addLoop[float32]
	case arithSub:
		tail = subLoop[float32]
	case arithMul:
		tail = mulLoop[float32]
	default:
		tail = divLoop[float32]
	}
	return func(o, a, b []float32, sa, sb int) {
		n := arithVectors(op, o, a, b, sa, sb)
		if n < len(o) {
			tail(o[n:], a[n*sa:], b[n*sb:], sa, sb)
		}
	}
}

// arithVectors runs op over the whole vectors of o on the assembly
// kernel, where there is one, and returns how many elements it did (a
// multiple of 8, or 0); the caller's Go loop does the rest. Called
// directly, not through a function value, it leaves its callers' buffers
// on their stacks.
func arithVectors(op int, o, a, b []float32, sa, sb int) int {
	if !arithAsm || len(o) < 8 {
		return 0
	}
	n := len(o) &^ 7
	// The slice expressions check the operands' lengths.
	_, _ = a[(n-1)*sa], b[(n-1)*sb]
	wide := 0
	if arith512 {
		wide = n &^ 15
		if wide > 0 {
			arithAVX512(op, &o[0], &a[0], &b[0], wide, sa, sb)
		}
	}
	if wide < n {
		arithAVX2(op, &o[wide], &a[wide*sa], &b[wide*sb], n-wide, sa, sb)
	}
	return n
}

// Float32 loops of the binary operators.
var (
	addF32 = arithF32Loop(arithAdd)
	subF32 = arithF32Loop(arithSub)
	mulF32 = arithF32Loop(arithMul)
	divF32 = arithF32Loop(arithDiv)
)
