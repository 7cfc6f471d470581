package cpu

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
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
//
// Hand-off is by atomics: the caller writes a helper's task into its slot
// and bumps the slot's sequence number; the helper, which spins for a short
// while after each task before it parks, sees the new number and runs the
// task. The caller spins until every helper has finished. Kernels follow
// each other within microseconds, so helpers rarely park during a run: no
// goroutine switch, and none of the runtime's wait records that parking on
// a channel costs.
type Workers struct {
	n       int
	slots   []*slot
	pending atomic.Int32 // helpers still running their share of the loop
	panics  []any        // per helper: the value of a panic in its last task
	quit    atomic.Bool
	busy    atomic.Bool // between Begin and End: helpers never park
	once    sync.Once
	closed  bool
	done    <-chan struct{} // closed when the current run is cancelled (see SetDone)
}

// slot is one helper's mailbox.
type slot struct {
	seq      atomic.Uint64 // bumped by the caller when t holds new work
	sleeping atomic.Bool   // the helper is parked (or about to) on wake
	wake     chan struct{} // capacity 1: a token that unparks the helper
	t        task
	_        [64]byte // keep neighbouring slots off one cache line
}

// spinFor is how long a helper keeps polling for work before it parks.
const spinFor = 100 * time.Microsecond

// NewWorkers starts a pool of n threads of work: the calling goroutine plus
// n-1 helpers. n <= 0 means runtime.GOMAXPROCS(0). With n == 1 every loop
// runs inline on the caller.
func NewWorkers(n int) *Workers {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	w := &Workers{n: n}
	if n > 1 {
		w.slots = make([]*slot, n-1)
		w.panics = make([]any, n-1)
		for i := range w.slots {
			w.slots[i] = &slot{wake: make(chan struct{}, 1)}
			go w.helper(i)
		}
	}
	return w
}

func (w *Workers) helper(i int) {
	// Kernels read weights from the mapped model file; a fault there
	// becomes a panic, re-raised on the caller, instead of a crash.
	debug.SetPanicOnFault(true)
	s := w.slots[i]
	var seen uint64
	for {
		seq, ok := w.await(s, seen)
		if !ok {
			return
		}
		seen = seq
		w.runTask(i, &s.t)
		w.pending.Add(-1)
	}
}

// await waits until s holds work newer than seen and returns its sequence
// number, or false once the pool is closed. It spins for spinFor, then
// parks on the slot's wake channel.
func (w *Workers) await(s *slot, seen uint64) (uint64, bool) {
	deadline := time.Now().Add(spinFor)
	for spins := 1; ; spins++ {
		if v := s.seq.Load(); v != seen {
			return v, true
		}
		if w.quit.Load() {
			return 0, false
		}
		if spins%64 != 0 {
			continue
		}
		runtime.Gosched()
		if w.busy.Load() {
			deadline = time.Now().Add(spinFor)
			continue
		}
		if time.Now().Before(deadline) {
			continue
		}
		s.sleeping.Store(true)
		if v := s.seq.Load(); v != seen || w.quit.Load() {
			s.sleeping.Store(false)
			continue
		}
		<-s.wake
		s.sleeping.Store(false)
		deadline = time.Now().Add(spinFor)
	}
}

// Begin tells the pool that a run of kernels starts: until End, helpers
// keep polling for work instead of parking between kernels, so that the
// hand-offs of a run cost no goroutine switch. End lets them park again
// once they have been idle for a while.
func (w *Workers) Begin() {
	if w != nil {
		w.busy.Store(true)
	}
}

// SetDone gives the channel whose closing cancels the current run (a
// context's Done; nil for none). Kernels that iterate for as long as the
// model says, such as Loop, poll it through Canceled.
func (w *Workers) SetDone(done <-chan struct{}) {
	if w != nil {
		w.done = done
	}
}

// Canceled reports whether the current run has been cancelled.
func (w *Workers) Canceled() bool {
	if w == nil || w.done == nil {
		return false
	}
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// End marks the end of a run of kernels (see Begin).
func (w *Workers) End() {
	if w != nil {
		w.busy.Store(false)
	}
}

// give hands t to helper i.
func (w *Workers) give(i int, t task) {
	s := w.slots[i]
	s.t = t
	s.seq.Add(1)
	if s.sleeping.Load() {
		select {
		case s.wake <- struct{}{}:
		default: // a token is already waiting
		}
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
		w.quit.Store(true)
		for _, s := range w.slots {
			select {
			case s.wake <- struct{}{}:
			default:
			}
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
	w.pending.Store(int32(parts - 1))
	for i := 1; i < parts; i++ {
		s := t
		s.lo, s.hi = i*n/parts, (i+1)*n/parts
		w.give(i-1, s)
	}
	t.lo, t.hi = 0, n/parts
	p := w.runInline(&t)
	for spins := 1; w.pending.Load() != 0; spins++ {
		if spins%64 == 0 {
			runtime.Gosched()
		}
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
