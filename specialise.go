package berth

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	if w := x.opts.weights; w != nil {
		w.Close()
	}
}

// checkSymbols checks that Options.Dims and Options.MaxDims name symbols
// of the model and give them sizes a tensor can have.
func checkSymbols(symbols []string, opts Options) error {
	for _, set := range []struct {
		flag string
		dims map[string]int64
	}{{"Dims", opts.Dims}, {"MaxDims", opts.MaxDims}} {
		for _, sym := range slices.Sorted(maps.Keys(set.dims)) {
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

// compileOpen compiles a model with open shapes: at once when opts.Dims
// fixes every shape, else into an executable that specialises per run.
func compileOpen(m *Model, dev Device, opts Options) (*Executable, error) {
	o := m.open
	if err := checkSymbols(o.symbols, opts); err != nil {
		return nil, err
	}
	b, err := backendOf(dev, &opts)
	if err != nil {
		return nil, err
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
	o.mu.Lock()
	byValue := slices.Contains(o.byValue, true)
	o.mu.Unlock()
	// A model known to take shapes from input values has no plan before
	// its inputs come.
	if flat, decls, ok := x.feedsAt(x.fixed); ok && !byValue && !opts.perRun {
		sm, err := o.specialise(flat, decls, make([]bool, len(o.sig.Inputs)), nil, nil)
		if err == nil {
			e, err := compileStatic(sm, dev, opts)
			if err != nil {
				sm.Close()
				if !errors.Is(err, ir.ErrValueDependent) {
					return nil, err
				}
			} else {
				e.owned = append(e.owned, sm)
				o.release()
				return e, nil
			}
		} else if !errors.Is(err, ir.ErrValueDependent) {
			return nil, err
		}
		// Shapes follow from input values too: specialise per run.
	}
	// Every plan of the model packs its weights into one store, so that
	// plans for other shapes share the layouts they have in common (a
	// lone plan, above, lays a blocked layout over the packed one
	// instead, to save the memory).
	x.opts.weights = b.NewWeights(o.parsed.files(o.bytes))
	if len(opts.MaxDims) > 0 {
		if err := x.planAtBound(); err != nil {
			return nil, err
		}
	}
	// Fail now rather than at the first run where the device is absent.
	if err := b.Available(); err != nil {
		x.close()
		return nil, fmt.Errorf("compile for %s: %w", b.Name(), err)
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
	m, err := x.o.specialise(flat, decls, make([]bool, len(x.o.sig.Inputs)), nil, nil)
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
	x.opts.bound = exe.x
	x.o.release()
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
