package driver

import (
	"fmt"
	"sync"
	"unsafe"
)

// BLAS is a cuBLAS handle (cublasHandle_t). Like every other call here,
// its methods run on the owner thread.
type BLAS uintptr

// BLASStatus is a cublasStatus_t; every non-zero value is an error.
type BLASStatus int32

var blasStatusNames = map[BLASStatus]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (s BLASStatus) Error() string {
	if n, ok := blasStatusNames[s]; ok {
		return fmt.Sprintf("%s (%d)", n, int32(s))
	}
	return fmt.Sprintf("cuBLAS status %d", int32(s))
}

// MathMode is a cublasMath_t.
type MathMode int32

// Math modes.
const (
	// DefaultMath keeps float32 GEMMs in float32 arithmetic.
	DefaultMath MathMode = 0
	// PedanticMath forbids every reduced-precision shortcut.
	PedanticMath MathMode = 2
	// TF32Math lets float32 GEMMs use the TF32 tensor cores.
	TF32Math MathMode = 3
)

// Operations of a GEMM operand (cublasOperation_t).
const (
	OpN = 0
	OpT = 1
)

var blasLib struct {
	once                                                                       sync.Once
	err                                                                        error
	name                                                                       string
	create, destroy, setStream, setWorkspace, setMathMode, sgemmStridedBatched uintptr
	gemmStridedBatchedEx                                                       uintptr
}

// blasNames are the names cuBLAS is installed under, newest first.
var blasNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"}

// LoadBLAS opens cuBLAS. Where it is absent the error wraps
// ErrUnavailable, and GEMMs run on berth's own kernels.
func LoadBLAS() error {
	blasLib.once.Do(func() {
		if err := Load(); err != nil {
			blasLib.err = err
			return
		}
		blasLib.name, blasLib.err = openFirst("cuBLAS", blasNames, []symbolRef{
			{&blasLib.create, "cublasCreate_v2"}, {&blasLib.destroy, "cublasDestroy_v2"},
			{&blasLib.setStream, "cublasSetStream_v2"}, {&blasLib.setWorkspace, "cublasSetWorkspace_v2"},
			{&blasLib.setMathMode, "cublasSetMathMode"}, {&blasLib.sgemmStridedBatched, "cublasSgemmStridedBatched"},
			{&blasLib.gemmStridedBatchedEx, "cublasGemmStridedBatchedEx"},
		})
	})
	return blasLib.err
}

// BLASLibrary names the cuBLAS library LoadBLAS opened.
func BLASLibrary() string { return blasLib.name }

func blasCall(fn uintptr, args ...uintptr) error {
	r := cCall(fn, args...)
	if int32(r) != 0 {
		return BLASStatus(int32(r))
	}
	return nil
}

// NewBLAS creates a cuBLAS handle in the current context.
func NewBLAS() (BLAS, error) {
	if err := LoadBLAS(); err != nil {
		return 0, err
	}
	var h BLAS
	r := cCall(blasLib.create, uintptr(unsafe.Pointer(&h)))
	if int32(r) != 0 {
		return 0, fmt.Errorf("cublasCreate: %w", BLASStatus(int32(r)))
	}
	return h, nil
}

// Destroy frees the handle.
func (h BLAS) Destroy() error {
	if h == 0 {
		return nil
	}
	return blasCall(blasLib.destroy, uintptr(h))
}

// SetStream makes the handle queue its work on s.
func (h BLAS) SetStream(s Stream) error { return blasCall(blasLib.setStream, uintptr(h), uintptr(s)) }

// SetWorkspace gives the handle n bytes of device memory at p as its
// workspace, so that it never allocates while a graph is captured.
func (h BLAS) SetWorkspace(p Ptr, n int64) error {
	return blasCall(blasLib.setWorkspace, uintptr(h), uintptr(p), uintptr(n))
}

// SetMathMode chooses the arithmetic of the handle's GEMMs.
func (h BLAS) SetMathMode(m MathMode) error {
	return blasCall(blasLib.setMathMode, uintptr(h), uintptr(m))
}

// Sgemm is the argument list of one cublasSgemmStridedBatched call, in
// cuBLAS's column-major terms: C = alpha·op(A)·op(B) + beta·C for each of
// Batch matrices, A, B and C Stride* elements apart.
type Sgemm struct {
	TransA, TransB   int
	M, N, K          int
	A, B, C          Ptr
	LDA, LDB, LDC    int
	StrideA, StrideB int64
	StrideC          int64
	Batch            int
	Alpha, Beta      *float32 // on the host, on the heap
}

// SgemmArgs fills the argument block a for s on handle h; RunSgemm then
// issues it without allocating. Alpha and Beta must stay alive (and
// unchanged, unless the call should see the new values) while a is used.
func (h BLAS) SgemmArgs(s *Sgemm, a Args) {
	a[0], a[1], a[2] = uintptr(h), uintptr(s.TransA), uintptr(s.TransB)
	a[3], a[4], a[5] = uintptr(s.M), uintptr(s.N), uintptr(s.K)
	a[6] = uintptr(unsafe.Pointer(s.Alpha))
	a[7], a[8], a[9] = uintptr(s.A), uintptr(s.LDA), uintptr(s.StrideA)
	a[10], a[11], a[12] = uintptr(s.B), uintptr(s.LDB), uintptr(s.StrideB)
	a[13] = uintptr(unsafe.Pointer(s.Beta))
	a[14], a[15], a[16] = uintptr(s.C), uintptr(s.LDC), uintptr(s.StrideC)
	a[17] = uintptr(s.Batch)
}

// RunSgemm issues the cublasSgemmStridedBatched call whose arguments
// SgemmArgs wrote into a.
func RunSgemm(a Args) error {
	if r := callArgs(blasLib.sgemmStridedBatched, a[:18]); r != 0 {
		return fmt.Errorf("cublasSgemmStridedBatched: %w", BLASStatus(r))
	}
	return nil
}

// DataType is a cudaDataType_t: the element type of a GemmEx operand.
type DataType int32

// Element types of GemmEx operands.
const (
	R32F  DataType = 0  // CUDA_R_32F
	R16F  DataType = 2  // CUDA_R_16F
	R16BF DataType = 14 // CUDA_R_16BF
)

// compute32F is CUBLAS_COMPUTE_32F: float32 accumulation, whatever the
// operand types.
const compute32F = 68

// gemmDefault is CUBLAS_GEMM_DEFAULT (-1, an int in C: the low 32 bits
// of the argument word): cuBLAS picks the algorithm.
const gemmDefault = 0xffffffff

// GemmEx is the argument list of one cublasGemmStridedBatchedEx call with
// A and B of type AB, C of type C (the zero value: float32) and float32
// accumulation (CUBLAS_COMPUTE_32F), in cuBLAS's column-major terms like
// Sgemm. Strides and leading dimensions count elements.
type GemmEx struct {
	Sgemm
	AB DataType
	C  DataType
}

// GemmExArgs fills the argument block a for g on handle h; RunGemmEx then
// issues it without allocating. Alpha and Beta must stay alive while a is
// used.
func (h BLAS) GemmExArgs(g *GemmEx, a Args) {
	s := &g.Sgemm
	a[0], a[1], a[2] = uintptr(h), uintptr(s.TransA), uintptr(s.TransB)
	a[3], a[4], a[5] = uintptr(s.M), uintptr(s.N), uintptr(s.K)
	a[6] = uintptr(unsafe.Pointer(s.Alpha))
	a[7], a[8], a[9], a[10] = uintptr(s.A), uintptr(g.AB), uintptr(s.LDA), uintptr(s.StrideA)
	a[11], a[12], a[13], a[14] = uintptr(s.B), uintptr(g.AB), uintptr(s.LDB), uintptr(s.StrideB)
	a[15] = uintptr(unsafe.Pointer(s.Beta))
	a[16], a[17], a[18], a[19] = uintptr(s.C), uintptr(g.C), uintptr(s.LDC), uintptr(s.StrideC)
	a[20], a[21] = uintptr(s.Batch), uintptr(compute32F)
	a[22] = gemmDefault
}

// RunGemmEx issues the cublasGemmStridedBatchedEx call whose arguments
// GemmExArgs wrote into a.
func RunGemmEx(a Args) error {
	if r := callArgs(blasLib.gemmStridedBatchedEx, a[:23]); r != 0 {
		return fmt.Errorf("cublasGemmStridedBatchedEx: %w", BLASStatus(r))
	}
	return nil
}
