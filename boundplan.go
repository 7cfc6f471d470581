package berth

import (
	"github.com/berth-ml/berth/plan"
)

// planTemplate is the plan of a model with open shapes at its bound
// (Options.MaxDims) and the problem it solves.
type planTemplate struct {
	problem *plan.Problem
	plan    *plan.Plan
}

// reusePlan returns the plan at the bound (tp, tpl) refit to p, the
// problem of the same model at shapes within the bound (plan.Refit), or
// nil where it does not serve: the steps differ, or a tensor does not fit
// its slot at the bound. Planning a shape within the bound this way takes
// no placement, and the plan never needs more than the bound's arena.
func reusePlan(p, tp *plan.Problem, tpl *plan.Plan, opts plan.Options) *plan.Plan {
	pl, err := plan.Refit(p, tp, tpl, opts)
	if err != nil {
		return nil
	}
	return pl
}

// overwriteAs takes overwrite mode back from the fused steps of p whose
// step in tp, the problem at the bound, does without it (as
// pruneOverwrites found there), so that p's steps match tp's.
func (e *Executable) overwriteAs(p, tp *plan.Problem) {
	if len(p.Steps) != len(tp.Steps) {
		return
	}
	for _, f := range e.fusions {
		if len(f.overwrite) == 0 || f.plain == nil || f.step >= len(p.Steps) {
			continue
		}
		if st := &p.Steps[f.step]; len(st.Overwrite) > 0 && len(tp.Steps[f.step].Overwrite) == 0 {
			st.Overwrite = nil
			if f.scratch >= 0 {
				p.Tensors[f.scratch].Size = f.kernelBytes
			}
			f.kernel, f.overwrite, f.temp, f.tempAt = f.plain, nil, 0, 0
		}
	}
}
