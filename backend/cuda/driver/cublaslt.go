package driver

import (
	"fmt"
	"sync"
	"unsafe"
)

// LtHandle is a cuBLASLt handle (cublasLtHandle_t). cuBLASLt runs the
// products whose epilogue adds a bias and applies an activation as they
// are written, which plain cuBLAS cannot.
type LtHandle uintptr

// Epilogue is a cublasLtEpilogue_t: what cublasLtMatmul does to each
// sum before it writes it.
type Epilogue uint32

// Epilogues.
const (
	EpilogueNone     Epilogue = 1  // CUBLASLT_EPILOGUE_DEFAULT
	EpilogueRelu     Epilogue = 2  // CUBLASLT_EPILOGUE_RELU
	EpilogueBias     Epilogue = 4  // CUBLASLT_EPILOGUE_BIAS: + bias[row]
	EpilogueReluBias Epilogue = 6  // CUBLASLT_EPILOGUE_RELU_BIAS
	EpilogueGelu     Epilogue = 32 // CUBLASLT_EPILOGUE_GELU (tanh form)
	EpilogueGeluBias Epilogue = 36 // CUBLASLT_EPILOGUE_GELU_BIAS
)

// cublasLtMatmulDescAttributes_t.
const (
	ltDescTransA       = 3
	ltDescTransB       = 4
	ltDescEpilogue     = 7
	ltDescBiasPointer  = 8
	ltDescBiasDataType = 26
)

// cublasLtMatrixLayoutAttribute_t.
const (
	ltLayoutBatchCount         = 5
	ltLayoutStridedBatchOffset = 6
)

// ltPrefMaxWorkspaceBytes is CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES.
const ltPrefMaxWorkspaceBytes = 1

// ltHeuristicBytes is the size of a cublasLtMatmulHeuristicResult_t: the
// algorithm (64 bytes), its workspace size, state, waves and reserved
// words.
const ltHeuristicBytes = 96

var ltLib struct {
	once sync.Once
	err  error
	name string
	create, destroy, descCreate, descDestroy, descSet, layoutCreate, layoutDestroy, layoutSet,
	prefCreate, prefDestroy, prefSet, heuristic, matmul uintptr
}

// ltNames are the names cuBLASLt is installed under, newest first.
var ltNames = []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}

// LoadLt opens cuBLASLt. Where it is absent the error wraps
// ErrUnavailable.
func LoadLt() error {
	ltLib.once.Do(func() {
		if err := Load(); err != nil {
			ltLib.err = err
			return
		}
		ltLib.name, ltLib.err = openFirst("cuBLASLt", ltNames, []symbolRef{
			{&ltLib.create, "cublasLtCreate"}, {&ltLib.destroy, "cublasLtDestroy"},
			{&ltLib.descCreate, "cublasLtMatmulDescCreate"}, {&ltLib.descDestroy, "cublasLtMatmulDescDestroy"},
			{&ltLib.descSet, "cublasLtMatmulDescSetAttribute"},
			{&ltLib.layoutCreate, "cublasLtMatrixLayoutCreate"}, {&ltLib.layoutDestroy, "cublasLtMatrixLayoutDestroy"},
			{&ltLib.layoutSet, "cublasLtMatrixLayoutSetAttribute"},
			{&ltLib.prefCreate, "cublasLtMatmulPreferenceCreate"}, {&ltLib.prefDestroy, "cublasLtMatmulPreferenceDestroy"},
			{&ltLib.prefSet, "cublasLtMatmulPreferenceSetAttribute"},
			{&ltLib.heuristic, "cublasLtMatmulAlgoGetHeuristic"}, {&ltLib.matmul, "cublasLtMatmul"},
		})
	})
	return ltLib.err
}

// NewLt creates a cuBLASLt handle.
func NewLt() (LtHandle, error) {
	if err := LoadLt(); err != nil {
		return 0, err
	}
	var h LtHandle
	if err := blasCall(ltLib.create, uintptr(unsafe.Pointer(&h))); err != nil {
		return 0, fmt.Errorf("cublasLtCreate: %w", err)
	}
	return h, nil
}

// Destroy frees the handle.
func (h LtHandle) Destroy() error {
	if h == 0 {
		return nil
	}
	return blasCall(ltLib.destroy, uintptr(h))
}

// LtGemm is one product D = epilogue(alpha·op(A)·op(B) + beta·C) in
// cuBLAS's column-major terms, A and B of type AB, C and D of type CD,
// float32 sums, Batch products Stride* elements apart; Bias (M elements,
// of type CD, or float32 where Bias32 says so) where the epilogue adds
// one. C may be D itself.
type LtGemm struct {
	TransA, TransB   int
	M, N, K          int64
	A, B, C, D, Bias Ptr
	LDA, LDB, LDC    int64
	StrideA, StrideB int64
	StrideC          int64
	Batch            int64
	AB, CD           DataType
	Epilogue         Epilogue
	Bias32           bool
}

// LtPlan is an LtGemm made ready to run: its descriptors, the algorithm
// cuBLASLt chose for it, and the argument block of cublasLtMatmul. It is
// made once (with the session) and run any number of times without
// allocating; Close frees the descriptors.
type LtPlan struct {
	desc, a, b, c, pref uintptr
	algo                [ltHeuristicBytes]byte
	alpha, beta         float32
	args                Args
}

// Plan prepares g for handle h with at most workspace bytes of workspace
// at ws, queued on stream s. Alpha and beta are the product's factors.
func (h LtHandle) Plan(g *LtGemm, alpha, beta float32, ws Ptr, workspace int64, s Stream) (*LtPlan, error) {
	p := &LtPlan{alpha: alpha, beta: beta, args: NewArgs()}
	fail := func(what string, err error) (*LtPlan, error) {
		p.Close()
		return nil, fmt.Errorf("cuBLASLt %s: %w", what, err)
	}
	if err := blasCall(ltLib.descCreate, uintptr(unsafe.Pointer(&p.desc)), compute32F, uintptr(R32F)); err != nil {
		return fail("matmul descriptor", err)
	}
	set := func(attr int, v unsafe.Pointer, n uintptr) error {
		return blasCall(ltLib.descSet, p.desc, uintptr(attr), uintptr(v), n)
	}
	ta, tb, ep := int32(g.TransA), int32(g.TransB), uint32(g.Epilogue)
	bias, biasType := uint64(g.Bias), int32(g.CD)
	if g.Bias32 {
		biasType = int32(R32F)
	}
	if err := set(ltDescTransA, unsafe.Pointer(&ta), 4); err != nil {
		return fail("transA", err)
	}
	if err := set(ltDescTransB, unsafe.Pointer(&tb), 4); err != nil {
		return fail("transB", err)
	}
	if err := set(ltDescEpilogue, unsafe.Pointer(&ep), 4); err != nil {
		return fail("epilogue", err)
	}
	if g.Bias != 0 {
		if err := set(ltDescBiasPointer, unsafe.Pointer(&bias), 8); err != nil {
			return fail("bias", err)
		}
		if err := set(ltDescBiasDataType, unsafe.Pointer(&biasType), 4); err != nil {
			return fail("bias type", err)
		}
	}
	// The layouts: A is M×K (K×M transposed), B K×N (N×K), C and D M×N,
	// column-major with their leading dimensions.
	layout := func(out *uintptr, t DataType, rows, cols, ld, stride int64) error {
		if err := blasCall(ltLib.layoutCreate, uintptr(unsafe.Pointer(out)), uintptr(t), uintptr(rows), uintptr(cols), uintptr(ld)); err != nil {
			return err
		}
		if g.Batch > 1 {
			n, st := int32(g.Batch), stride
			if err := blasCall(ltLib.layoutSet, *out, ltLayoutBatchCount, uintptr(unsafe.Pointer(&n)), 4); err != nil {
				return err
			}
			if err := blasCall(ltLib.layoutSet, *out, ltLayoutStridedBatchOffset, uintptr(unsafe.Pointer(&st)), 8); err != nil {
				return err
			}
		}
		return nil
	}
	ar, ac := g.M, g.K
	if g.TransA != OpN {
		ar, ac = g.K, g.M
	}
	br, bc := g.K, g.N
	if g.TransB != OpN {
		br, bc = g.N, g.K
	}
	if err := layout(&p.a, g.AB, ar, ac, g.LDA, g.StrideA); err != nil {
		return fail("A layout", err)
	}
	if err := layout(&p.b, g.AB, br, bc, g.LDB, g.StrideB); err != nil {
		return fail("B layout", err)
	}
	if err := layout(&p.c, g.CD, g.M, g.N, g.LDC, g.StrideC); err != nil {
		return fail("C layout", err)
	}
	if err := blasCall(ltLib.prefCreate, uintptr(unsafe.Pointer(&p.pref))); err != nil {
		return fail("preference", err)
	}
	wsBytes := uint64(workspace)
	if err := blasCall(ltLib.prefSet, p.pref, ltPrefMaxWorkspaceBytes, uintptr(unsafe.Pointer(&wsBytes)), 8); err != nil {
		return fail("workspace preference", err)
	}
	var found int32
	if err := blasCall(ltLib.heuristic, uintptr(h), p.desc, p.a, p.b, p.c, p.c, p.pref, 1,
		uintptr(unsafe.Pointer(&p.algo[0])), uintptr(unsafe.Pointer(&found))); err != nil {
		return fail("heuristic", err)
	}
	if found == 0 {
		return fail("heuristic", fmt.Errorf("no algorithm for %d×%d×%d", g.M, g.N, g.K))
	}
	a := p.args
	a[0], a[1], a[2] = uintptr(h), p.desc, uintptr(unsafe.Pointer(&p.alpha))
	a[3], a[4], a[5], a[6] = uintptr(g.A), p.a, uintptr(g.B), p.b
	a[7], a[8], a[9] = uintptr(unsafe.Pointer(&p.beta)), uintptr(g.C), p.c
	a[10], a[11] = uintptr(g.D), p.c
	a[12], a[13], a[14], a[15] = uintptr(unsafe.Pointer(&p.algo[0])), uintptr(ws), uintptr(workspace), uintptr(s)
	return p, nil
}

// Run issues the product on its stream (or captures it into a graph)
// without allocating.
func (p *LtPlan) Run() error {
	if r := callArgs(ltLib.matmul, p.args[:16]); r != 0 {
		return fmt.Errorf("cublasLtMatmul: %w", BLASStatus(r))
	}
	return nil
}

// Close frees the plan's descriptors.
func (p *LtPlan) Close() {
	for _, d := range []struct {
		fn uintptr
		h  *uintptr
	}{{ltLib.descDestroy, &p.desc}, {ltLib.layoutDestroy, &p.a}, {ltLib.layoutDestroy, &p.b}, {ltLib.layoutDestroy, &p.c}, {ltLib.prefDestroy, &p.pref}} {
		if *d.h != 0 {
			blasCall(d.fn, *d.h)
			*d.h = 0
		}
	}
}
