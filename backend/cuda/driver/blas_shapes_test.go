package driver

import (
	"errors"
	"testing"
	"time"
)

// BenchmarkBLASNewShapes times, on the host, what a float32 product costs
// cuBLAS the first time its shape is seen and after: the products of a
// ResNet-50 at batch one (a row-major M×K weight times K×N patches: M, K
// from the stages' convolutions, N about the stage's pixels at 240×240)
// at an N never used before in the process each iteration, then again at
// that N (µs a call: cublasSgemmStridedBatched issued, before the
// stream's wait), and cuBLASLt's plan of each (its heuristic) at yet
// another N, then cublasSgemm at that N after the plans.
func BenchmarkBLASNewShapes(b *testing.B) {
	d := openOrSkip(b)
	if err := LoadLt(); errors.Is(err, ErrUnavailable) {
		b.Skipf("no cuBLASLt here: %v", err)
	}
	type mk struct{ m, k int64 }
	var stages [4][]mk
	for s, c := range []int64{64, 128, 256, 512} {
		stages[s] = []mk{{c, 4 * c}, {c, 9 * c}, {4 * c, c}, {4 * c, 2 * c}}
	}
	const maxN, maxMK = 60*60 + 2*2048, 2048 * 4608
	var sgemmNew, sgemmSeen, ltPlan, sgemmAfterLt time.Duration
	calls, plans := 0, 0
	err := d.Do(func() error {
		h, err := NewBLAS()
		if err != nil {
			return err
		}
		defer h.Destroy()
		lt, err := NewLt()
		if err != nil {
			return err
		}
		defer lt.Destroy()
		s, err := NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		const ws = 32 << 20
		var pa, pb, pc, pws Ptr
		for _, x := range []struct {
			p *Ptr
			n int64
		}{{&pa, 4 * maxMK}, {&pb, 4 * 4608 * maxN}, {&pc, 4 * 2048 * maxN}, {&pws, ws}} {
			if *x.p, err = Alloc(x.n); err != nil {
				return err
			}
			defer Free(*x.p)
		}
		if err := h.SetStream(s); err != nil {
			return err
		}
		if err := h.SetWorkspace(pws, ws); err != nil {
			return err
		}
		alpha, beta := float32(1), float32(0)
		args := NewArgs()
		// Y (M×N, row-major) = W (M×K) · X (K×N) is cuBLAS's column-major
		// Yᵀ = Xᵀ·Wᵀ: M' = N, N' = M.
		sgemm := func(m, n, k int64) (time.Duration, error) {
			h.SgemmArgs(&Sgemm{TransA: OpN, TransB: OpN, M: int(n), N: int(m), K: int(k), A: pb, B: pa, C: pc,
				LDA: int(n), LDB: int(k), LDC: int(n), Batch: 1, Alpha: &alpha, Beta: &beta}, args)
			start := time.Now()
			err := RunSgemm(args)
			return time.Since(start), err
		}
		// Each stage's N in iteration i: its pixels at 240×240, plus 2i
		// (plus one for cuBLASLt's): new to the process every time.
		nOf := func(st, i int, lt bool) int64 {
			n := int64(240/(4<<st))*int64(240/(4<<st)) + 2*int64(i)
			if lt {
				n++
			}
			return n
		}
		for i := 0; i < b.N; i++ {
			for pass := 0; pass < 2; pass++ {
				for st, ps := range stages {
					n := nOf(st, i, false)
					for _, p := range ps {
						t, err := sgemm(p.m, n, p.k)
						if err != nil {
							return err
						}
						if pass == 0 {
							sgemmNew += t
							calls++
						} else {
							sgemmSeen += t
						}
					}
				}
				if err := s.Synchronize(); err != nil {
					return err
				}
			}
			var made []*LtPlan
			for st, ps := range stages {
				n := nOf(st, i, true)
				for _, p := range ps {
					start := time.Now()
					pl, err := lt.Plan(&LtGemm{TransA: OpN, TransB: OpN, M: n, N: p.m, K: p.k, A: pb, B: pa, C: pc, D: pc,
						LDA: n, LDB: p.k, LDC: n, Batch: 1, AB: R32F, CD: R32F, Epilogue: EpilogueNone}, 1, 0, pws, ws, s)
					ltPlan += time.Since(start)
					if err != nil {
						return err
					}
					made = append(made, pl)
					plans++
				}
			}
			for _, pl := range made {
				pl.Close()
			}
			for st, ps := range stages {
				n := nOf(st, i, true)
				for _, p := range ps {
					t, err := sgemm(p.m, n, p.k)
					if err != nil {
						return err
					}
					sgemmAfterLt += t
				}
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	us := func(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(max(n, 1)) }
	b.ReportMetric(us(sgemmNew, calls), "sgemm-new-us")
	b.ReportMetric(us(sgemmSeen, calls), "sgemm-seen-us")
	b.ReportMetric(us(ltPlan, plans), "lt-plan-us")
	b.ReportMetric(us(sgemmAfterLt, plans), "sgemm-after-lt-us")
}
