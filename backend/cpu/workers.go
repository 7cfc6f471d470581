package cpu

import (
	"runtime"
	"sync"
)

// Ranger is the parallel body of a kernel: it processes items [lo, hi).
type Ranger interface {
	Range(in, out [][]byte, scratch []byte, lo, hi int)
}

// args carries a few integers from a kernel's Run to its parallel body, so
// that one kernel can issue several differently parameterised parallel
// loops without allocating.
type args [4]int64

// argRanger is the internal variant of Ranger that also receives args.
type argRanger interface {
	rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int)
}

// task is one contiguous share of a parallel loop. It travels by value over
// a channel, so handing out work allocates nothing.
type task struct {
	r       Ranger
	ar      argRanger
	a       args
	in, out [][]byte
	scratch []byte
	lo, hi  int
}

func (t *task) run() {
	if t.ar != nil {
		t.ar.rangeArgs(t.in, t.out, t.scratch, t.a, t.lo, t.hi)
		return
	}
	t.r.Range(t.in, t.out, t.scratch, t.lo, t.hi)
}

// Workers is a persistent pool of goroutines that run the parallel parts of
// kernels. A session owns one Workers; it serves one caller at a time, and a
// parallel body must not call For on the pool that runs it.
type Workers struct {
	n      int
	tasks  []chan task   // one channel per helper goroutine
	done   chan struct{} // one signal per finished task
	panics []any         // per helper: the value of a panic in its last task
	once   sync.Once
	closed bool
}

// NewWorkers starts a pool of n threads of work: the calling goroutine plus
// n-1 helpers. n <= 0 means runtime.GOMAXPROCS(0). With n == 1 every loop
// runs inline on the caller.
func NewWorkers(n int) *Workers {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	w := &Workers{n: n}
	if n > 1 {
		w.tasks = make([]chan task, n-1)
		w.panics = make([]any, n-1)
		w.done = make(chan struct{}, n-1)
		for i := range w.tasks {
			w.tasks[i] = make(chan task, 1)
			go w.helper(i)
		}
	}
	return w
}

func (w *Workers) helper(i int) {
	for t := range w.tasks[i] {
		w.runTask(i, &t)
		w.done <- struct{}{}
	}
}

// runTask runs t on helper i and records a panic instead of crashing the
// process, so that For can re-raise it on the caller's goroutine.
func (w *Workers) runTask(i int, t *task) {
	defer func() {
		if p := recover(); p != nil {
			w.panics[i] = p
		}
	}()
	t.run()
}

// Close stops the helper goroutines. Later loops run inline. Close is
// idempotent.
func (w *Workers) Close() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		w.closed = true
		for _, c := range w.tasks {
			close(c)
		}
	})
}

// Threads is the number of threads of work, the caller included. A nil
// *Workers runs everything inline and has one thread.
func (w *Workers) Threads() int {
	if w == nil {
		return 1
	}
	return w.n
}

// For splits [0, n) evenly over the workers (and the calling goroutine),
// calls r.Range on each share and waits for all of them. A panic in any
// share is re-raised on the caller once every share has finished.
func (w *Workers) For(n int, r Ranger, in, out [][]byte, scratch []byte) {
	w.split(n, w.Threads(), task{r: r, in: in, out: out, scratch: scratch})
}

// forArgs is For for an argRanger, split into at most parts shares.
func (w *Workers) forArgs(n, parts int, r argRanger, a args, in, out [][]byte, scratch []byte) {
	w.split(n, parts, task{ar: r, a: a, in: in, out: out, scratch: scratch})
}

// minGrain is the amount of work (roughly, inner-loop iterations) below
// which waking another goroutine costs more than it saves.
const minGrain = 1 << 15

// parts returns how many shares a loop of the given total work deserves.
func (w *Workers) parts(work int) int {
	if w == nil {
		return 1
	}
	p := work / minGrain
	if p < 1 {
		return 1
	}
	if p > w.n {
		return w.n
	}
	return p
}

// split runs [0, n) in at most parts contiguous shares.
func (w *Workers) split(n, parts int, t task) {
	if n <= 0 {
		return
	}
	if w != nil {
		parts = min(parts, n, w.n)
	}
	if w == nil || w.closed || parts <= 1 {
		t.lo, t.hi = 0, n
		t.run()
		return
	}
	for i := 1; i < parts; i++ {
		s := t
		s.lo, s.hi = i*n/parts, (i+1)*n/parts
		w.tasks[i-1] <- s
	}
	t.lo, t.hi = 0, n/parts
	p := w.runInline(&t)
	for i := 1; i < parts; i++ {
		<-w.done
	}
	for i := 0; i < parts-1; i++ {
		if w.panics[i] != nil {
			if p == nil {
				p = w.panics[i]
			}
			w.panics[i] = nil
		}
	}
	if p != nil {
		panic(p)
	}
}

func (w *Workers) runInline(t *task) (p any) {
	defer func() { p = recover() }()
	t.run()
	return nil
}
