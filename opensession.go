package berth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
)

// special is one plan an open session keeps: the model prepared for one
// set of input shapes (and values of the inputs bound by value), its
// executable and a session of it.
//
// Where shapes follow from values that the graph itself computes (the
// boxes a NonMaxSuppression keeps, a Loop's computed trip count), the
// plans form a tree: a stage is a plan of the part of the graph that
// computes those values (goal); each of its kids is the rest of the graph
// specialised on one set of them, which may in turn be a stage. A plan
// that computes the graph's outputs is final.
type special struct {
	key    []int64  // the run's shapes (see openSession.keyOf)
	values [][]byte // by flat input: the value bound to it, or nil
	m      *Model
	exe    *Executable
	s      *Session
	feeds  []Tensor // the plan's session's inputs, refilled every run
	from   []int    // its input i is flat input from[i]
	names  []string // its input i's name
	used   uint64   // when it last ran (openSession.tick)
	bytes  int64    // its activation arena, where it is not the session's
	shared bool     // m and exe are the executable's plan at the bound

	// bound holds the computed values the plan was specialised on: those
	// of its parent's goal and of the stages above.
	bound map[string]ir.Tensor
	// goal names what a stage computes; pending what the plans after it
	// compute in turn (nil for the graph's outputs, last). A final plan
	// has neither.
	goal    []string
	pending [][]string
	kids    []*special
}

func (sp *special) final() bool { return sp.goal == nil }

func (sp *special) close() {
	for _, k := range sp.kids {
		k.close()
	}
	sp.kids = nil
	sp.s.Close()
	if !sp.shared {
		sp.exe.Close()
		sp.m.Close()
	}
}

// openSession is a session of an openExec: the plans it has compiled and
// buffers each run reuses.
type openSession struct {
	x       *openExec
	plans   []*special // the roots, one per set of shapes and input values
	last    *special   // the final plan of the last run
	tick    uint64
	flat    []Tensor // this run's inputs in declared order, sequences flattened
	decls   []int    // flat input i feeds declared input decls[i]
	key     []int64
	symbols []int64 // this run's size of each symbol (-1: not seen)
	// lane, where the executable has a plan at the bound, holds the
	// arena of every plan that fits it: made with the session, at the
	// bound's size. Other plans have a lane of their own.
	lane backend.Lane
	// retired are the plans let go during this run, closed when it ends:
	// its inputs may be the outputs of one of them, in an arena that
	// closing frees.
	retired []*special
}

func (x *openExec) newSession() (*openSession, error) {
	ss := &openSession{x: x, symbols: make([]int64, len(x.o.symbols))}
	if b := x.atBound; b != nil {
		lane, err := b.exe.dev.NewLane([]backend.Executable{b.exe.x}, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("new session: %w", err)
		}
		ss.lane = lane
	}
	return ss, nil
}

func (ss *openSession) close() error {
	ss.closeRetired()
	for _, sp := range ss.plans {
		sp.close()
	}
	ss.plans, ss.last = nil, nil
	if ss.lane != nil {
		return ss.lane.Close()
	}
	return nil
}

// run finds the plan for the inputs (compiling it the first time their
// shapes are seen; a plan already made is reused without allocating) and
// runs it; a stage's outputs lead to the kid specialised on them.
func (ss *openSession) run(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	defer ss.closeRetired()
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
		if sp, err = ss.compileRoot(); err != nil {
			return nil, err
		}
	}
	ss.tick++
	sp.used = ss.tick
	for {
		for i, k := range sp.from {
			sp.feeds[i] = ss.flat[k]
			sp.feeds[i].Name = sp.names[i]
		}
		outs, err := sp.s.run(ctx, sp.feeds, nil)
		if err != nil || sp.final() {
			if err == nil {
				ss.last = sp
			}
			return outs, err
		}
		kid := sp.kid(outs, ss.flat)
		if kid == nil {
			if kid, err = ss.compileKid(sp, outs); err != nil {
				return nil, err
			}
		}
		kid.used = ss.tick
		sp = kid
	}
}

// kid returns the plan specialised on the values outs of sp's goal (and
// on the values of the run's inputs flat that it binds).
func (sp *special) kid(outs, flat []Tensor) *special {
	for _, k := range sp.kids {
		same := true
		for i, name := range sp.goal {
			v := k.bound[name]
			same = same && v.DType == outs[i].DType && slices.Equal(v.Shape, ir.Shape(outs[i].Shape)) && bytes.Equal(v.Data, outs[i].Data)
		}
		for i, v := range k.values {
			same = same && (v == nil || bytes.Equal(v, flat[i].Data))
		}
		if same {
			return k
		}
	}
	return nil
}

// find returns the root plan made for this run's key and values.
func (ss *openSession) find() *special {
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

// maxSpecialiseTries bounds how often compile widens what it binds before
// it gives up.
const maxSpecialiseTries = 8

// named returns this run's inputs in declared order named as the graph
// inputs they feed (sequence elements as SequenceElement names).
func (ss *openSession) named() []Tensor {
	o := ss.x.o
	flat := slices.Clone(ss.flat)
	count := map[int]int{}
	for i := range flat {
		v := &o.sig.Inputs[ss.decls[i]]
		flat[i].Name = v.Name
		if v.Kind == onnx.SequenceValue {
			flat[i].Name = onnx.SequenceElement(v.Name, count[ss.decls[i]])
			count[ss.decls[i]]++
		}
	}
	return flat
}

// compileRoot makes the plan for this run's shapes, or the first stage
// of it, and keeps it, releasing the least recently used root when the
// session keeps Options.Plans already or their arenas would pass the
// memory limit.
func (ss *openSession) compileRoot() (*special, error) {
	x, o := ss.x, ss.x.o
	flat := ss.named()
	if b := x.atBound; b != nil && slices.Equal(b.key, ss.key) {
		sp, err := ss.open(b.m, b.exe, flat, nil, true)
		if err != nil {
			return nil, err
		}
		ss.admit(sp)
		return sp, nil
	}
	o.mu.Lock()
	byValue := slices.Clone(o.byValue)
	o.mu.Unlock()
	sp, err := ss.compile(flat, byValue, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	for i := range sp.values {
		if sp.values[i] != nil {
			o.byValue[ss.decls[i]] = true
		}
	}
	o.mu.Unlock()
	ss.admit(sp)
	return sp, nil
}

// compileKid makes the plan after the stage sp, specialised on the values
// outs of its goal, and keeps it among sp's kids (Options.Plans of them at
// most, the least recently used released first).
func (ss *openSession) compileKid(sp *special, outs []Tensor) (*special, error) {
	bound := make(map[string]ir.Tensor, len(sp.bound)+len(sp.goal))
	for k, v := range sp.bound {
		bound[k] = v
	}
	for i, name := range sp.goal {
		o := outs[i]
		bound[name] = ir.Tensor{Name: name, DType: o.DType, Shape: ir.Shape(slices.Clone(o.Shape)), Data: bytes.Clone(o.Data)}
	}
	byValue := make([]bool, len(ss.x.o.sig.Inputs))
	for i, v := range sp.values {
		if v != nil {
			byValue[ss.decls[i]] = true
		}
	}
	kid, err := ss.compile(ss.named(), byValue, bound, sp.pending[0], sp.pending[1:])
	if err != nil {
		return nil, err
	}
	if len(sp.kids) >= ss.x.plans {
		oldest := 0
		for i, k := range sp.kids {
			if k.used < sp.kids[oldest].used {
				oldest = i
			}
		}
		ss.retire(sp.kids[oldest])
		sp.kids = slices.Delete(sp.kids, oldest, oldest+1)
	}
	sp.kids = append(sp.kids, kid)
	return kid, nil
}

// compile specialises the model for the run's inputs flat, binding by
// value the declared inputs byValue marks and the computed tensors bound,
// to compute goal (nil: the graph's outputs) with pending still to come.
// Each failure for want of a value widens what is bound: an input's value
// is bound from this run, and a computed value makes the plan a stage
// that computes it first.
func (ss *openSession) compile(flat []Tensor, byValue []bool, bound map[string]ir.Tensor, goal []string, pending [][]string) (*special, error) {
	x, o := ss.x, ss.x.o
	byValue = slices.Clone(byValue)
	for try := 0; ; try++ {
		sm, err := o.specialise(flat, ss.decls, byValue, bound, goal)
		var exe *Executable
		if err == nil {
			if exe, err = compileStatic(sm, x.dev, x.opts); err != nil {
				sm.Close()
			}
		}
		if err == nil {
			exe.owned = append(exe.owned, sm)
			o.release()
			sp, err := ss.open(sm, exe, flat, byValue, false)
			if err != nil {
				return nil, err
			}
			sp.bound, sp.goal, sp.pending = bound, goal, pending
			return sp, nil
		}
		var ve *ir.ValueError
		if try == maxSpecialiseTries || !errors.As(err, &ve) {
			return nil, err
		}
		if _, done := bound[ve.Tensor]; !done && !o.isInput(ve.Tensor) {
			if stage := o.stageGoal(ve.Tensor, bound); stage != nil {
				pending = append([][]string{goal}, pending...)
				goal = stage
				continue
			}
		}
		if !o.learn(err, byValue) {
			return nil, err
		}
	}
}

// open opens a session of exe, compiled from sm for this run's inputs
// flat (named as the graph inputs they feed), byValue marking the
// declared inputs bound by value.
func (ss *openSession) open(sm *Model, exe *Executable, flat []Tensor, byValue []bool, shared bool) (*special, error) {
	s, err := exe.newSession(ss.lane)
	if err != nil {
		if !shared {
			exe.Close()
		}
		return nil, err
	}
	sp := &special{key: slices.Clone(ss.key), m: sm, exe: exe, s: s, shared: shared}
	if ss.lane == nil || exe.ArenaBytes() > ss.lane.Bytes() {
		sp.bytes = exe.ArenaBytes() // a lane of its own
	}
	sp.values = make([][]byte, len(flat))
	for i := range flat {
		if byValue != nil && byValue[ss.decls[i]] {
			sp.values[i] = bytes.Clone(flat[i].Data)
		}
	}
	g := exe.g
	sp.feeds = make([]Tensor, len(g.Inputs))
	sp.from = make([]int, len(g.Inputs))
	sp.names = make([]string, len(g.Inputs))
	for i, id := range g.Inputs {
		sp.names[i] = g.Tensor(id).Name
		sp.from[i] = slices.IndexFunc(flat, func(t Tensor) bool { return t.Name == sp.names[i] })
		if sp.from[i] < 0 {
			sp.close()
			return nil, fmt.Errorf("specialise: graph input %q is not among the inputs given", sp.names[i])
		}
	}
	return sp, nil
}

// admit adds sp to the kept roots, releasing the least recently used ones
// while there are more than Options.Plans or their arenas together pass
// the memory limit.
func (ss *openSession) admit(sp *special) {
	limit := ss.x.opts.MemoryLimit
	if limit == 0 {
		limit = device.HostMemory()
	}
	total := sp.bytes
	if ss.lane != nil {
		total += ss.lane.Bytes()
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
		ss.retire(ss.plans[oldest])
		ss.plans = slices.Delete(ss.plans, oldest, oldest+1)
	}
	ss.plans = append(ss.plans, sp)
}

// retire lets sp go: it is closed when the run ends (see retired).
func (ss *openSession) retire(sp *special) {
	ss.last = nil // it may be among those let go
	ss.retired = append(ss.retired, sp)
}

// closeRetired closes the plans retired during the run.
func (ss *openSession) closeRetired() {
	for _, sp := range ss.retired {
		sp.close()
	}
	clear(ss.retired)
	ss.retired = ss.retired[:0]
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
			found = found || feeds(v, in.Name)
		}
		if !found && v.Kind != onnx.SequenceValue {
			missing = append(missing, v.Name)
		}
	}
	for _, in := range inputs {
		found := false
		for _, v := range sig.Inputs {
			found = found || feeds(v, in.Name)
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
	for j, in := range inputs {
		if inputNamed(inputs[:j], in.Name, -1) >= 0 {
			return fmt.Errorf("input %q is given twice", in.Name)
		}
		for _, v := range sig.Inputs {
			if k, ok := elementIndex(in.Name, v.Name); ok && v.Kind == onnx.SequenceValue && k > 0 && inputNamed(inputs, v.Name, k-1) < 0 {
				return fmt.Errorf("input %q: sequence %q has no element %d (its elements are numbered from 0 without gaps)", in.Name, v.Name, k-1)
			}
		}
	}
	return fmt.Errorf("the model takes %d input(s) %q, got %d", len(want), want, len(inputs))
}

// check checks each input against its declaration: the element type,
// its shape (see openModel.checkDims: the sizes Options.Dims fixes and
// MaxDims bounds too) and the data's length.
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
		if err := x.o.checkDims(name, v, t.Shape, x.fixed, x.bound, ss.symbols); err != nil {
			return err
		}
		if want := ir.Shape(t.Shape).Bytes(t.DType); int64(len(t.Data)) != want {
			return fmt.Errorf("input %q: expected %d bytes of data for %s%v, got %d", name, want, t.DType, ir.Shape(t.Shape), len(t.Data))
		}
	}
	return nil
}

// checkDims checks shape, that of the input called name fed to the
// declared input v, against v: a shape a tensor can have, the rank (any
// for an input declared a scalar), every fixed size, the sizes fixed and
// bounded by symbol (fixed and bound by symbol index, -1 for none; nil:
// none at all), and the same size for every dimension named by one
// symbol: sizes holds the size each symbol took so far (-1: none yet),
// which checkDims updates.
func (o *openModel) checkDims(name string, v *onnx.Value, shape []int64, fixed, bound, sizes []int64) error {
	if err := ir.Shape(shape).Validate(); err != nil {
		return fmt.Errorf("input %q: %w", name, err)
	}
	// An input declared a scalar takes any shape, as ONNX Runtime lets it
	// (a sample rate fed as [1]); the plan is made for the shape given.
	ranked := v.Ranked && len(v.Shape) > 0
	if !ranked {
		return nil
	}
	if len(shape) != len(v.Shape) {
		return fmt.Errorf("input %q: expected rank %d %s, got shape %v", name, len(v.Shape), v.Shape, ir.Shape(shape))
	}
	for k, n := range shape {
		d := v.Shape[k]
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
		j := slices.Index(o.symbols, d.Symbol)
		switch {
		case fixed != nil && fixed[j] >= 0 && n != fixed[j]:
			return fmt.Errorf("input %q: dimension %d (%s) is %d, fixed at %d", name, k, d.Symbol, n, fixed[j])
		case bound != nil && bound[j] >= 0 && n > bound[j]:
			return fmt.Errorf("input %q: dimension %d (%s) is %d, above its bound %d", name, k, d.Symbol, n, bound[j])
		case sizes[j] >= 0 && n != sizes[j]:
			return fmt.Errorf("input %q: dimension %d (%s) is %d, but another input gives %s = %d", name, k, d.Symbol, n, d.Symbol, sizes[j])
		}
		sizes[j] = n
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
