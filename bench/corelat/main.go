// Command corelat measures how long it takes two CPUs to pass a cache line
// back and forth: the round trip of a hand-off between two threads of
// work, which is what a parallel loop pays at its start and end and what
// every byte one core writes and the other reads goes through.
//
//	go run ./bench/corelat            # the first two CPUs this process may use
//	go run ./bench/corelat -cpus 0,3  # a chosen pair
//	go run ./bench/corelat -ns        # only the number, for scripts
//	go run ./bench/corelat -mib 1     # and reading 1 MiB the other CPU wrote
//
// Two goroutines, each locked to its OS thread and that thread pinned to
// one CPU, take turns bumping a counter on a cache line of its own: each
// waits, spinning, until the other has bumped it. The result is the median
// over -reps batches of -n round trips, in nanoseconds.
//
// With -mib M it also times one CPU reading M MiB, one word a cache line,
// right after the other CPU wrote it, and right after writing it itself:
// what a step of a parallel run pays to read what another worker of the
// step before produced, against reading its own.
//
// On a virtual machine this can change while the guest runs: the host may
// place two virtual CPUs on cores that share a last-level cache (round
// trips near 100 ns on the development machine of bench/RESULTS.md) or on
// cores that do not (near 400 ns), and code that moves data between its
// threads runs markedly slower in the second placement.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "corelat:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("corelat", flag.ContinueOnError)
	cpus := fs.String("cpus", "", "the two CPUs, as \"A,B\" (default: the first two this process may run on)")
	n := fs.Int("n", 20000, "round trips per batch")
	reps := fs.Int("reps", 5, "batches; the median is reported")
	bare := fs.Bool("ns", false, "print only the median round trip in nanoseconds")
	mib := fs.Int("mib", 0, "also time reading this many MiB that the other CPU just wrote (0: no)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *n < 1 || *n > 1e7 || *reps < 1 || *reps > 1000 {
		return errors.New("-n must be in [1, 1e7] and -reps in [1, 1000]")
	}
	if *mib < 0 || *mib > 1024 {
		return errors.New("-mib must be in [0, 1024]")
	}
	a, b, err := pair(*cpus)
	if err != nil {
		return err
	}
	times := make([]time.Duration, *reps)
	for i := range times {
		if times[i], err = roundTrip(a, b, *n); err != nil {
			return err
		}
	}
	slices.Sort(times)
	med := times[len(times)/2]
	if *bare {
		fmt.Println(med.Nanoseconds())
		return nil
	}
	fmt.Printf("cpu %d ↔ cpu %d: %d ns a round trip (median of %d × %d; fastest batch %d ns, slowest %d ns)\n",
		a, b, med.Nanoseconds(), *reps, *n, times[0].Nanoseconds(), times[len(times)-1].Nanoseconds())
	if *mib > 0 {
		remote, local, err := transfer(a, b, *mib<<20, *reps)
		if err != nil {
			return err
		}
		perMiB := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(*mib) }
		fmt.Printf("cpu %d reading %d MiB: %.0f µs a MiB written by cpu %d, %.0f µs a MiB written by itself (medians of %d)\n",
			a, *mib, perMiB(remote), b, perMiB(local), *reps)
	}
	return nil
}

// sink keeps the sums alive.
var sink atomic.Uint64

// touch writes every word of b.
func touch(b []uint64, v uint64) {
	for i := range b {
		b[i] = v
	}
}

// sumLines reads one word of every 64-byte line of b.
func sumLines(b []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	for i := 0; i+31 < len(b); i += 32 {
		s0 += b[i]
		s1 += b[i+8]
		s2 += b[i+16]
		s3 += b[i+24]
	}
	return s0 + s1 + s2 + s3
}

// pair parses "A,B", or, when s is empty, picks the first two CPUs this
// process may run on.
func pair(s string) (a, b int, err error) {
	if s == "" {
		cpus, err := allowedCPUs()
		if err != nil {
			return 0, 0, err
		}
		if len(cpus) < 2 {
			return 0, 0, errors.New("this process may run on one CPU only; there is no pair to measure")
		}
		return cpus[0], cpus[1], nil
	}
	fields := strings.Split(s, ",")
	if len(fields) != 2 {
		return 0, 0, fmt.Errorf("-cpus %q: want two CPU numbers, as \"0,1\"", s)
	}
	var v [2]int
	for i, f := range fields {
		if v[i], err = strconv.Atoi(strings.TrimSpace(f)); err != nil || v[i] < 0 || v[i] >= maxCPU {
			return 0, 0, fmt.Errorf("-cpus %q: %q is not a CPU number", s, f)
		}
	}
	if v[0] == v[1] {
		return 0, 0, fmt.Errorf("-cpus %q: the two CPUs must differ", s)
	}
	return v[0], v[1], nil
}

// maxCPU bounds the CPU numbers taken: the size of the kernel's default
// CPU set, which the affinity calls use.
const maxCPU = 1024

// line is a counter alone on its cache line.
type line struct {
	_ [64]byte
	v atomic.Int64
	_ [64]byte
}

// onPair runs side on CPU b and timed on CPU a, each in a goroutine locked
// to its thread and that thread pinned, and returns once timed has
// returned, or with the error of a pinning that failed. The threads are
// never unlocked, so that they end with their goroutines instead of going
// back to the scheduler with their affinity changed. flag is the line the
// two sides take turns on: a side that cannot pin itself sets it to -1,
// which side must watch for while it waits.
func onPair(a, b int, flag *line, side, timed func()) error {
	ready := make(chan error, 1)
	go func() {
		if err := lockAndPin(b, flag); err != nil {
			ready <- err
			return
		}
		ready <- nil
		side()
	}()
	done := make(chan error, 1)
	go func() {
		if err := lockAndPin(a, flag); err != nil {
			done <- err
			return
		}
		if err := <-ready; err != nil {
			done <- err
			return
		}
		timed()
		done <- nil
	}()
	return <-done
}

// lockAndPin locks the calling goroutine to its thread and pins that
// thread to cpu; where it cannot, it sets flag to -1 for the other side.
func lockAndPin(cpu int, flag *line) error {
	runtime.LockOSThread()
	if err := pin(cpu); err != nil {
		flag.v.Store(-1)
		return err
	}
	return nil
}

// await spins until flag holds v, and reports false if it turns negative
// first (the other side could not pin itself).
func await(flag *line, v int64) bool {
	for {
		switch x := flag.v.Load(); {
		case x == v:
			return true
		case x < 0:
			return false
		}
	}
}

// roundTrip times n round trips between CPUs a and b and returns the time
// of one.
func roundTrip(a, b, n int) (d time.Duration, err error) {
	var l line
	err = onPair(a, b, &l, func() {
		for i := int64(0); i < int64(n); i++ {
			if !await(&l, 2*i+1) {
				return
			}
			l.v.Store(2*i + 2)
		}
	}, func() {
		start := time.Now()
		for i := int64(0); i < int64(n); i++ {
			l.v.Store(2*i + 1)
			await(&l, 2*i+2)
		}
		d = time.Since(start) / time.Duration(n)
	})
	return d, err
}

// transfer times CPU a reading size bytes, one word of every cache line,
// right after CPU b wrote all of them, and right after writing them
// itself; it returns the median of reps of each.
func transfer(a, b, size, reps int) (remote, local time.Duration, err error) {
	buf := make([]uint64, size/8)
	var turn line // 2i+1: b is to write the buffer; 2i+2: b has written it
	err = onPair(a, b, &turn, func() {
		for i := int64(0); i < int64(reps); i++ {
			if !await(&turn, 2*i+1) {
				return
			}
			touch(buf, uint64(i))
			turn.v.Store(2*i + 2)
		}
	}, func() {
		r, l := make([]time.Duration, reps), make([]time.Duration, reps)
		for i := range int64(reps) {
			turn.v.Store(2*i + 1)
			await(&turn, 2*i+2)
			start := time.Now()
			sink.Add(sumLines(buf))
			r[i] = time.Since(start)
			touch(buf, uint64(i))
			start = time.Now()
			sink.Add(sumLines(buf))
			l[i] = time.Since(start)
		}
		slices.Sort(r)
		slices.Sort(l)
		remote, local = r[reps/2], l[reps/2]
	})
	return remote, local, err
}
