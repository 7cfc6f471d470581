package berth

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/berth-ml/berth/backend/cuda"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// A generator on CUDA (GeneratorOptions.Device) compiles the same step
// graphs as on the CPU, for the GPU. Every plan's session runs on one
// lane: one device arena, sized for the largest plan, whose first bytes
// are the cache of keys and values in every plan (checked), so that the
// cache stays on the device from step to step and plan to plan and is
// never copied in or out; one stream; and page-locked staging, where a
// run finds its tokens and position and leaves its logits. The packed
// weights are uploaded once, into a store the plans share. A session
// captures its launches into a CUDA graph on its second run, so that each
// step replays one graph: the kernels read the position from device
// memory, and the graph serves every position.

// cudaGen is what a generator on CUDA holds beside its plans.
type cudaGen struct {
	store *cuda.WeightStore // the packed weights, on the device once
	lane  *cuda.Lane        // the arena, stream and staging of every plan
}

// initCUDA readies g to compile its plans for CUDA.
func (g *Generator) initCUDA() error {
	if err := cudaAvailable(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	g.cuda = &cudaGen{}
	return nil
}

// cudaWeights makes, for the first plan, the store that keeps the model's
// packed weights (the uint8 constants of its graph, windows of the mapped
// files) on the device for every plan.
func (g *Generator) cudaWeights(m *Model) {
	if g.cuda.store != nil {
		return
	}
	var files [][]byte
	for i := range m.graph.Tensors {
		t := &m.graph.Tensors[i]
		if t.IsConst() && t.DType == ir.Uint8 && len(t.Data) > 0 {
			files = append(files, t.Data)
		}
	}
	g.cuda.store = cuda.NewWeightStoreOf(files)
	g.opts.cudaWeights = g.cuda.store
}

// bindCUDA gives every plan a session on the generator's lane, making a
// larger lane (the cache copied over) where a plan does not fit.
func (g *Generator) bindCUDA() error {
	plans := g.plans()
	off, size := g.decode.exe.cuda.StateSlots()
	var keep int64
	for i := range off {
		keep = max(keep, off[i]+size[i])
	}
	for _, p := range plans {
		o, s := p.exe.cuda.StateSlots()
		if !slices.Equal(o, off) || !slices.Equal(s, size) {
			return fmt.Errorf("generate: the plan of %d tokens holds the cache at %v, the step's at %v", p.t, o, off)
		}
	}
	if g.cuda.lane != nil {
		fits := true
		for _, p := range plans {
			if p.cs != nil {
				continue
			}
			err := g.openCUDA(p)
			if errors.Is(err, cuda.ErrLaneTooSmall) {
				fits = false
				break
			}
			if err != nil {
				return err
			}
		}
		if fits {
			return nil
		}
	}
	exes := make([]*cuda.Executable, len(plans))
	for i, p := range plans {
		exes[i] = p.exe.cuda
	}
	lane, err := cuda.NewLaneFor(exes, g.cuda.lane, keep)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	for _, p := range plans {
		if p.cs != nil {
			p.cs.Close()
			p.cs = nil
		}
	}
	if g.cuda.lane != nil {
		g.cuda.lane.Close()
	}
	g.cuda.lane = lane
	for _, p := range plans {
		if err := g.openCUDA(p); err != nil {
			return err
		}
	}
	return nil
}

// openCUDA makes p's session on the generator's lane: its tokens and
// position are written straight into the session's staging.
func (g *Generator) openCUDA(p *stepPlan) error {
	s, err := p.exe.cuda.NewSessionOn(g.cuda.lane)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	in, out := s.Staging()
	p.cs, p.out = s, out[0]
	p.tokens, p.pos = raw.I64(in[0]), raw.I64(in[1])
	return nil
}

// execCUDA runs p on the inputs in its staging and returns its logits
// (in the staging too, valid until the next run).
func (g *Generator) execCUDA(ctx context.Context, p *stepPlan) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.cs.RunStaged(); err != nil {
		return nil, fmt.Errorf("generate: %w: %v", ErrKernel, err)
	}
	return raw.F32(p.out), nil
}

// close frees the lane and the device weights; the plans are closed
// before.
func (c *cudaGen) close() error {
	var errs []error
	if c.lane != nil {
		errs = append(errs, c.lane.Close())
	}
	if c.store != nil {
		errs = append(errs, c.store.Close())
	}
	return errors.Join(errs...)
}
