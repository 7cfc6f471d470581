package plan

import (
	"fmt"
	"slices"
)

// Refit returns pl, the plan of problem q, as a plan of p: a problem of
// the same steps whose tensors are no larger than q's (the same model at
// smaller shapes within a bound). The schedule and the offset of every
// slot's root are pl's, and so is the arena; views and in-place outputs
// lie inside their roots as p's offsets say, and the live bytes and LOAD
// are p's. No placement runs. It fails when p's steps or in-place
// takeovers differ from q's, or a tensor outgrows its slot; the plan it
// returns has passed Verify. The steps' pieces may differ (a Concat of
// channels has them at a batch of one only): those shared are views,
// which must be q's, and Verify checks where the others' copies go.
func Refit(p, q *Problem, pl *Plan, opts Options) (*Plan, error) {
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if len(p.Tensors) != len(q.Tensors) || len(p.Steps) != len(q.Steps) ||
		!slices.Equal(p.Inputs, q.Inputs) || !slices.Equal(p.Outputs, q.Outputs) {
		return nil, fmt.Errorf("plan: refit: the problems differ in their tensors or steps")
	}
	for i := range p.Steps {
		a, b := &p.Steps[i], &q.Steps[i]
		if a.Op != b.Op || !slices.Equal(a.Inputs, b.Inputs) || !slices.Equal(a.Outputs, b.Outputs) ||
			!slices.Equal(a.Overwrite, b.Overwrite) {
			return nil, fmt.Errorf("plan: refit: step %q differs", a.Name)
		}
	}
	for i := range p.Tensors {
		a, b := &p.Tensors[i], &q.Tensors[i]
		if a.Alias() != b.Alias() || a.Size > b.Size {
			return nil, fmt.Errorf("plan: refit: tensor %q (%d bytes) does not fit its slot of %d", a.Name, a.Size, b.Size)
		}
	}
	share := inPlace
	if opts.NoInPlace {
		share = nil
	}
	lv := analyze(p, pl.Order, true, share)
	for i, par := range lv.parent {
		want := q.Tensors[i].Alias()
		if want < 0 {
			want = pl.InPlace[i]
		}
		if par != want {
			return nil, fmt.Errorf("plan: refit: tensor %q takes its bytes from another tensor", p.Tensors[i].Name)
		}
	}
	out := *pl
	out.Offsets = make([]int64, len(p.Tensors))
	for i, r := range lv.root {
		if r == i {
			out.Offsets[i] = pl.Offsets[i]
		}
	}
	out.placeViews(p, lv.parent)
	align := pl.Alignment
	out.Start, out.End = lv.start, lv.end
	out.Live = lv.curve(p, align)
	out.LoadBytes = lv.load(p, align)
	out.PeakStep, out.PeakTensors = lv.peak(p, align)
	out.NaiveBytes = 0
	for i := range p.Tensors {
		out.NaiveBytes += AlignUp(p.Tensors[i].Size, align)
	}
	out.Schedule = RefitSchedule
	if err := Verify(p, &out); err != nil {
		return nil, fmt.Errorf("plan: refit: %w", err)
	}
	return &out, nil
}

// RefitSchedule is the Schedule of a plan Refit made: the schedule of the
// plan it refit.
const RefitSchedule = "refit"
