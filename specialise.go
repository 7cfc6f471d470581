package berth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
)

// openExec is an executable whose shapes are settled per run: the
// model, the device and the options each specialisation is compiled with.
type openExec struct {
	m     *Model
	o     *openModel
	dev   Device
	opts  Options
	plans int
	// fixed and bound hold Options.Dims and Options.MaxDims by symbol
	// index (-1: none).
	fixed, bound []int64
	// atBound is the plan made at the bound, when Options.MaxDims (with
	// Dims) bounds every symbol: every session's plans share one arena of
	// its size, allocated with the session.
	atBound *boundPlan
}

// boundPlan is the plan of an open model at its bound, which sessions
// share.
type boundPlan struct {
	key []int64 // as openSession.keyOf writes it
	m   *Model
	exe *Executable
}

func (x *openExec) close() {
	if b := x.atBound; b != nil {
		b.exe.Close()
		b.m.Close()
	}
}

// checkSymbols checks that Options.Dims and Options.MaxDims name symbols
// of the model and give them sizes a tensor can have.
func checkSymbols(symbols []string, opts Options) error {
	for _, set := range []struct {
		flag string
		dims map[string]int64
	}{{"Dims", opts.Dims}, {"MaxDims", opts.MaxDims}} {
		for _, sym := range slices.Sorted(mapsKeys(set.dims)) {
			if !slices.Contains(symbols, sym) {
				if len(symbols) == 0 {
					return fmt.Errorf("compile: %s: the model has no open dimension %q (its input shapes are all fixed)", set.flag, sym)
				}
				return fmt.Errorf("compile: %s: the model has no open dimension %q (its symbols: %s)", set.flag, sym, strings.Join(symbols, ", "))
			}
			if v := set.dims[sym]; v < 0 || v > ir.MaxElements {
				return fmt.Errorf("compile: %s: %s=%d is not a size", set.flag, sym, v)
			}
		}
	}
	for sym, v := range opts.Dims {
		if b, ok := opts.MaxDims[sym]; ok && v > b {
			return fmt.Errorf("compile: %s is fixed at %d, above its bound %d", sym, v, b)
		}
	}
	return nil
}

func mapsKeys(m map[string]int64) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// compileOpen compiles a model with open shapes: at once when opts.Dims
// fixes every shape, else into an executable that specialises per run.
func compileOpen(m *Model, dev Device, opts Options) (*Executable, error) {
	o := m.open
	if err := checkSymbols(o.symbols, opts); err != nil {
		return nil, err
	}
	switch dev {
	case CPU, "", CUDA:
	default:
		return nil, fmt.Errorf("compile: unknown device %q (want cpu or cuda)", dev)
	}
	x := &openExec{m: m, o: o, dev: dev, opts: opts, plans: opts.Plans}
	if x.plans <= 0 {
		x.plans = DefaultPlans
	}
	x.fixed, x.bound = make([]int64, len(o.symbols)), make([]int64, len(o.symbols))
	for i, sym := range o.symbols {
		x.fixed[i], x.bound[i] = -1, -1
		if v, ok := opts.Dims[sym]; ok {
			x.fixed[i] = v
		}
		if v, ok := opts.MaxDims[sym]; ok {
			x.bound[i] = v
		}
	}
	if flat, decls, ok := x.feedsAt(x.fixed); ok {
		o.mu.Lock()
		byValue := slices.Clone(o.byValue)
		o.mu.Unlock()
		sm, err := o.specialise(flat, decls, byValue)
		if err == nil {
			e, err := compileStatic(sm, dev, opts)
			if err != nil {
				sm.Close()
				if !errors.Is(err, ir.ErrValueDependent) {
					return nil, err
				}
			} else {
				e.owned = append(e.owned, sm)
				return e, nil
			}
		} else if !errors.Is(err, ir.ErrValueDependent) {
			return nil, err
		}
		// Shapes follow from input values too: specialise per run.
	}
	if len(opts.MaxDims) > 0 {
		if err := x.planAtBound(); err != nil {
			return nil, err
		}
	}
	if dev == CUDA {
		// Fail now rather than at the first run where CUDA is absent.
		if err := cudaAvailable(); err != nil {
			return nil, err
		}
	}
	return &Executable{model: m, device: dev, open: x}, nil
}

// planAtBound compiles the plan at the bound when Options.MaxDims (with
// Options.Dims) sizes every symbol; the sessions' arenas take its size.
// Where the model's shapes also follow from input values there is no one
// plan at the bound, and each run is planned for itself.
func (x *openExec) planAtBound() error {
	at := slices.Clone(x.fixed)
	for i, b := range x.bound {
		if at[i] < 0 {
			at[i] = b
		}
	}
	flat, decls, ok := x.feedsAt(at)
	if !ok {
		return nil
	}
	m, err := x.o.specialise(flat, decls, make([]bool, len(x.o.sig.Inputs)))
	if errors.Is(err, ir.ErrValueDependent) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("compile at the bound: %w", err)
	}
	exe, err := compileStatic(m, x.dev, x.opts)
	if errors.Is(err, ir.ErrValueDependent) {
		m.Close()
		return nil
	}
	if err != nil {
		m.Close()
		return fmt.Errorf("compile at the bound: %w", err)
	}
	var key []int64
	for i, t := range flat {
		key = append(key, int64(decls[i]), int64(len(t.Shape)))
		key = append(key, t.Shape...)
	}
	x.atBound = &boundPlan{key: key, m: m, exe: exe}
	return nil
}

// feedsAt is the inputs' shapes when sizes (by symbol, -1 for none) size
// every open dimension and no input is a sequence: tensors with shapes
// and no data, to specialise the model with.
func (x *openExec) feedsAt(sizes []int64) ([]Tensor, []int, bool) {
	var flat []Tensor
	var decls []int
	for k, v := range x.o.sig.Inputs {
		if v.Kind != onnx.TensorValue || !v.Ranked {
			return nil, nil, false
		}
		shape := make([]int64, len(v.Shape))
		for i, d := range v.Shape {
			shape[i] = d.Size
			if d.Open() {
				j := slices.Index(x.o.symbols, d.Symbol)
				if d.Symbol == "" || sizes[j] < 0 {
					return nil, nil, false
				}
				shape[i] = sizes[j]
			}
		}
		flat = append(flat, Tensor{Name: v.Name, DType: v.DType, Shape: shape})
		decls = append(decls, k)
	}
	return flat, decls, true
}

// special is one specialisation a session keeps: the model prepared for
// one set of input shapes (and values of the inputs bound by value), its
// executable and a session of it.
type special struct {
	key    []int64  // the shapes it was made for (see openSession.keyOf)
	values [][]byte // by flat input: the value it was bound to, or nil
	m      *Model
	exe    *Executable
	s      *Session
	feeds  []Tensor // the inner session's inputs, refilled every run
	from   []int    // inner input i is flat input from[i]
	names  []string // inner input i's name
	used   uint64   // when it last ran (openSession.tick)
	bytes  int64    // its activation arena, where it is not the session's
	shared bool     // m and exe are the executable's plan at the bound
}

func (sp *special) close() {
	sp.s.Close()
	if !sp.shared {
		sp.exe.Close()
		sp.m.Close()
	}
}

// openSession is a session of an openExec: the specialisations it has
// compiled, most recently used last in time, and buffers each run reuses.
type openSession struct {
	x       *openExec
	plans   []*special
	last    *special
	tick    uint64
	flat    []Tensor // this run's inputs in declared order, sequences flattened
	decls   []int    // flat input i feeds declared input decls[i]
	key     []int64
	symbols []int64 // this run's size of each symbol (-1: not seen)
	// workers run every specialisation's kernels (on the CPU).
	workers *cpu.Workers
	// buf holds the arena of every plan (on the CPU) when the executable
	// has a plan at the bound: sized for it, allocated with the session.
	buf *device.HostBuffer
}

func (x *openExec) newSession() (*openSession, error) {
	ss := &openSession{x: x, symbols: make([]int64, len(x.o.symbols))}
	if b := x.atBound; b != nil && b.exe.cuda == nil {
		buf, err := device.NewHostBuffer(b.exe.ArenaBytes(), Alignment)
		if err != nil {
			return nil, fmt.Errorf("new session: %w", err)
		}
		ss.buf = buf
	}
	return ss, nil
}

func (ss *openSession) close() error {
	for _, sp := range ss.plans {
		sp.close()
	}
	ss.plans, ss.last = nil, nil
	if ss.workers != nil {
		ss.workers.Close()
	}
	return nil
}

// run specialises for the inputs (a plan already made for their shapes
// is reused without allocating) and runs.
func (ss *openSession) run(ctx context.Context, inputs []Tensor, times []time.Duration) ([]Tensor, error) {
	if err := ss.flatten(inputs); err != nil {
		return nil, err
	}
	if err := ss.check(); err != nil {
		return nil, err
	}
	ss.keyOf()
	sp := ss.find()
	if sp == nil {
		var err error
		if sp, err = ss.compile(); err != nil {
			return nil, err
		}
	}
	ss.tick++
	sp.used, ss.last = ss.tick, sp
	for i, k := range sp.from {
		sp.feeds[i] = ss.flat[k]
		sp.feeds[i].Name = sp.names[i]
	}
	if times != nil {
		return sp.s.run(ctx, sp.feeds, times)
	}
	return sp.s.run(ctx, sp.feeds, nil)
}

// flatten matches the inputs with the declared ones, by name when every
// input is named and else by position, into ss.flat.
func (ss *openSession) flatten(inputs []Tensor) error {
	sig := ss.x.o.sig
	ss.flat, ss.decls = ss.flat[:0], ss.decls[:0]
	named := true
	for i := range inputs {
		named = named && inputs[i].Name != ""
	}
	if !named {
		if len(inputs) != len(sig.Inputs) {
			return ss.countError(inputs)
		}
		for k, v := range sig.Inputs {
			if v.Kind == onnx.SequenceValue {
				return fmt.Errorf("input %q is a sequence: name its elements %s, %s, …", v.Name, onnx.SequenceElement(v.Name, 0), onnx.SequenceElement(v.Name, 1))
			}
			ss.flat, ss.decls = append(ss.flat, inputs[k]), append(ss.decls, k)
			ss.flat[k].Name = v.Name
		}
		return nil
	}
	used := 0
	for k, v := range sig.Inputs {
		if v.Kind != onnx.SequenceValue {
			j := inputNamed(inputs, v.Name, -1)
			if j < 0 {
				return ss.countError(inputs)
			}
			ss.flat, ss.decls = append(ss.flat, inputs[j]), append(ss.decls, k)
			used++
			continue
		}
		for e := 0; ; e++ {
			j := inputNamed(inputs, v.Name, e)
			if j < 0 {
				break
			}
			ss.flat, ss.decls = append(ss.flat, inputs[j]), append(ss.decls, k)
			used++
		}
	}
	if used != len(inputs) {
		return ss.countError(inputs)
	}
	return nil
}

// inputNamed finds the input called name, or with elem ≥ 0 element elem of
// the sequence called name; -1 when there is none.
func inputNamed(inputs []Tensor, name string, elem int) int {
	for j := range inputs {
		if elem < 0 && inputs[j].Name == name {
			return j
		}
		if i, ok := elementIndex(inputs[j].Name, name); elem >= 0 && ok && i == elem {
			return j
		}
	}
	return -1
}

// countError names the inputs that are missing or not expected.
func (ss *openSession) countError(inputs []Tensor) error {
	sig := ss.x.o.sig
	var want, missing, extra []string
	for _, v := range sig.Inputs {
		want = append(want, v.Name)
		found := false
		for _, in := range inputs {
			_, elem := elementIndex(in.Name, v.Name)
			found = found || in.Name == v.Name || v.Kind == onnx.SequenceValue && elem
		}
		if !found && v.Kind != onnx.SequenceValue {
			missing = append(missing, v.Name)
		}
	}
	for _, in := range inputs {
		found := false
		for _, v := range sig.Inputs {
			_, elem := elementIndex(in.Name, v.Name)
			found = found || in.Name == v.Name || v.Kind == onnx.SequenceValue && elem
		}
		if !found && in.Name != "" {
			extra = append(extra, in.Name)
		}
	}
	switch {
	case len(extra) > 0:
		return fmt.Errorf("unexpected input(s) %q; the model's inputs are %q", extra, want)
	case len(missing) > 0:
		return fmt.Errorf("missing input(s) %q: the model takes %q", missing, want)
	}
	return fmt.Errorf("the model takes %d input(s) %q, got %d", len(want), want, len(inputs))
}

// check checks each input against its declaration: the element type, the
// rank, every fixed size, the sizes Options.Dims fixes and MaxDims bounds,
// the same size for every dimension named by one symbol, and the data's
// length.
func (ss *openSession) check() error {
	x := ss.x
	for i := range ss.symbols {
		ss.symbols[i] = -1
	}
	for i := range ss.flat {
		t := &ss.flat[i]
		v := &x.o.sig.Inputs[ss.decls[i]]
		name := t.Name
		if t.DType != v.DType {
			return fmt.Errorf("input %q: expected %s elements, got %s", name, v.DType, t.DType)
		}
		if err := ir.Shape(t.Shape).Validate(); err != nil {
			return fmt.Errorf("input %q: %w", name, err)
		}
		if v.Ranked && len(t.Shape) != len(v.Shape) {
			return fmt.Errorf("input %q: expected rank %d %s, got shape %v", name, len(v.Shape), v.Shape, ir.Shape(t.Shape))
		}
		for k := range t.Shape {
			if !v.Ranked {
				break
			}
			d, n := v.Shape[k], t.Shape[k]
			if !d.Open() {
				if n != d.Size {
					return fmt.Errorf("input %q: dimension %d is %d, the model fixes it at %d (shape %s)", name, k, n, d.Size, v.Shape)
				}
				continue
			}
			if d.Symbol == "" || v.Kind == onnx.SequenceValue {
				// A sequence's elements differ in size: its element
				// shape's symbols bind nothing across them.
				continue
			}
			j := slices.Index(x.o.symbols, d.Symbol)
			switch {
			case x.fixed[j] >= 0 && n != x.fixed[j]:
				return fmt.Errorf("input %q: dimension %d (%s) is %d, fixed at %d", name, k, d.Symbol, n, x.fixed[j])
			case x.bound[j] >= 0 && n > x.bound[j]:
				return fmt.Errorf("input %q: dimension %d (%s) is %d, above its bound %d", name, k, d.Symbol, n, x.bound[j])
			case ss.symbols[j] >= 0 && n != ss.symbols[j]:
				return fmt.Errorf("input %q: dimension %d (%s) is %d, but another input gives %s = %d", name, k, d.Symbol, n, d.Symbol, ss.symbols[j])
			}
			ss.symbols[j] = n
		}
		if want := ir.Shape(t.Shape).Bytes(t.DType); int64(len(t.Data)) != want {
			return fmt.Errorf("input %q: expected %d bytes of data for %s%v, got %d", name, want, t.DType, ir.Shape(t.Shape), len(t.Data))
		}
	}
	return nil
}

// keyOf writes the run's shapes into ss.key: for each flat input its
// declared input, rank and dimensions.
func (ss *openSession) keyOf() {
	ss.key = ss.key[:0]
	for i, t := range ss.flat {
		ss.key = append(ss.key, int64(ss.decls[i]), int64(len(t.Shape)))
		ss.key = append(ss.key, t.Shape...)
	}
}

// find returns the specialisation made for this run's key and values.
func (ss *openSession) find() *special {
	if sp := ss.last; sp != nil && ss.matches(sp) {
		return sp
	}
	for _, sp := range ss.plans {
		if ss.matches(sp) {
			return sp
		}
	}
	return nil
}

func (ss *openSession) matches(sp *special) bool {
	if !slices.Equal(sp.key, ss.key) {
		return false
	}
	for i, v := range sp.values {
		if v != nil && !bytes.Equal(v, ss.flat[i].Data) {
			return false
		}
	}
	return true
}

// maxSpecialiseTries bounds how often compile widens the inputs bound by
// value before it gives up.
const maxSpecialiseTries = 8

// compile makes the specialisation for this run: it imports and prepares
// the model for these shapes, binding by value the inputs found to decide
// shapes (and learning more of them from each failure), compiles it and
// opens a session, releasing the least recently used specialisation when
// the session keeps Options.Plans already or their arenas would pass the
// memory limit.
func (ss *openSession) compile() (*special, error) {
	x, o := ss.x, ss.x.o
	o.mu.Lock()
	byValue := slices.Clone(o.byValue)
	o.mu.Unlock()
	names := make([]string, len(ss.flat))
	flat := slices.Clone(ss.flat)
	count := map[int]int{}
	for i := range flat {
		v := &o.sig.Inputs[ss.decls[i]]
		names[i] = v.Name
		if v.Kind == onnx.SequenceValue {
			names[i] = onnx.SequenceElement(v.Name, count[ss.decls[i]])
			count[ss.decls[i]]++
		}
		flat[i].Name = names[i]
	}
	if b := x.atBound; b != nil && slices.Equal(b.key, ss.key) {
		return ss.open(b.m, b.exe, flat, names, make([]bool, len(o.sig.Inputs)), true)
	}
	var sm *Model
	var exe *Executable
	for try := 0; ; try++ {
		var err error
		sm, err = o.specialise(flat, ss.decls, byValue)
		if err == nil {
			if exe, err = compileStatic(sm, x.dev, x.opts); err != nil {
				sm.Close()
			}
		}
		if err == nil {
			break
		}
		if try == maxSpecialiseTries || !o.learn(err, byValue) {
			return nil, err
		}
	}
	o.mu.Lock()
	for k, b := range byValue {
		o.byValue[k] = o.byValue[k] || b
	}
	o.mu.Unlock()
	exe.owned = append(exe.owned, sm)
	return ss.open(sm, exe, flat, names, byValue, false)
}

// open opens a session of exe, compiled from sm for this run's inputs
// (flat, named names), and keeps it.
func (ss *openSession) open(sm *Model, exe *Executable, flat []Tensor, names []string, byValue []bool, shared bool) (*special, error) {
	if ss.workers == nil && exe.cuda == nil {
		ss.workers = cpu.NewWorkers(exe.threads)
	}
	s, err := exe.newSession(ss.workers, ss.buf)
	if err != nil {
		if !shared {
			exe.Close()
		}
		return nil, err
	}
	sp := &special{key: slices.Clone(ss.key), m: sm, exe: exe, s: s, shared: shared}
	if ss.buf == nil || exe.ArenaBytes() > ss.buf.Size() {
		sp.bytes = exe.ArenaBytes()
	}
	sp.values = make([][]byte, len(flat))
	for i := range flat {
		if byValue[ss.decls[i]] {
			sp.values[i] = bytes.Clone(flat[i].Data)
		}
	}
	g := exe.g
	sp.feeds = make([]Tensor, len(g.Inputs))
	sp.from = make([]int, len(g.Inputs))
	sp.names = make([]string, len(g.Inputs))
	for i, id := range g.Inputs {
		sp.names[i] = g.Tensor(id).Name
		sp.from[i] = slices.Index(names, g.Tensor(id).Name)
		if sp.from[i] < 0 {
			sp.close()
			return nil, fmt.Errorf("specialise: graph input %q is not among the inputs given", g.Tensor(id).Name)
		}
	}
	ss.admit(sp)
	return sp, nil
}

// admit adds sp to the kept specialisations, releasing the least recently
// used ones while there are more than Options.Plans or their arenas
// together pass the memory limit.
func (ss *openSession) admit(sp *special) {
	limit := ss.x.opts.MemoryLimit
	if limit == 0 {
		limit = device.HostMemory()
	}
	total := sp.bytes
	if ss.buf != nil {
		total += ss.buf.Size()
	}
	for _, p := range ss.plans {
		total += p.bytes
	}
	for len(ss.plans) > 0 && (len(ss.plans)+1 > ss.x.plans || limit > 0 && total > limit) {
		oldest := 0
		for i, p := range ss.plans {
			if p.used < ss.plans[oldest].used {
				oldest = i
			}
		}
		total -= ss.plans[oldest].bytes
		ss.plans[oldest].close()
		ss.plans = slices.Delete(ss.plans, oldest, oldest+1)
	}
	ss.plans = append(ss.plans, sp)
}
