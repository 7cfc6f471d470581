package plan

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"
)

// Report is a plan in a form meant for people and for JSON. Its byte counts
// carry the names the command line's `berth plan --json` uses.
type Report struct {
	Steps                    int               `json:"steps"`
	ActivationBytes          int64             `json:"activation_bytes"`
	LowerBoundBytes          int64             `json:"lower_bound_bytes"`
	FileOrderLowerBoundBytes int64             `json:"file_order_lower_bound_bytes"`
	NaiveBytes               int64             `json:"naive_bytes"`
	Alignment                int64             `json:"alignment"`
	Schedule                 string            `json:"schedule"`
	Schedules                []ScheduleAttempt `json:"schedules"`
	Heuristic                string            `json:"heuristic"`
	Attempts                 []Attempt         `json:"attempts"`
	Tensors                  []TensorReport    `json:"tensors"`
}

// TensorReport is one tensor's berth.
type TensorReport struct {
	Name   string `json:"name"`
	Op     string `json:"op"` // the operator that writes it; "input" for a graph input
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`            // true bytes
	Start  int    `json:"start"`           // first step (position in the schedule) it is in use
	End    int    `json:"end"`             // last step it is in use
	Alias  string `json:"alias,omitempty"` // for a view, the tensor it views
	// InPlaceOf is, for an output written over an input of its step, that
	// input.
	InPlaceOf string `json:"in_place_of,omitempty"`
}

// Report describes pl, a plan of p made by Build, tensor by tensor in the
// problem's order.
func (pl *Plan) Report(p *Problem) Report {
	r := Report{
		Steps:                    len(pl.Order),
		ActivationBytes:          pl.ArenaBytes,
		LowerBoundBytes:          pl.LoadBytes,
		FileOrderLowerBoundBytes: pl.FileOrderLoadBytes,
		NaiveBytes:               pl.NaiveBytes,
		Alignment:                pl.Alignment,
		Schedule:                 pl.Schedule,
		Schedules:                pl.Schedules,
		Heuristic:                pl.Heuristic,
		Attempts:                 pl.Attempts,
		Tensors:                  make([]TensorReport, len(p.Tensors)),
	}
	op := producerOps(p)
	for i := range p.Tensors {
		t := &p.Tensors[i]
		tr := TensorReport{Name: t.Name, Op: op[i], Offset: pl.Offsets[i], Size: t.Size}
		if i < len(pl.Start) && i < len(pl.End) {
			tr.Start, tr.End = pl.Start[i], pl.End[i]
		}
		if t.IsView() {
			tr.Alias = p.Tensors[t.Alias()].Name
		}
		if i < len(pl.InPlace) && pl.InPlace[i] >= 0 {
			tr.InPlaceOf = p.Tensors[pl.InPlace[i]].Name
		}
		r.Tensors[i] = tr
	}
	return r
}

// WriteText writes the report as a summary followed by a table of tensors.
func (r Report) WriteText(w io.Writer) error {
	over := ""
	if r.LowerBoundBytes > 0 {
		over = fmt.Sprintf(", %+.1f%% over the lower bound", 100*float64(r.ActivationBytes-r.LowerBoundBytes)/float64(r.LowerBoundBytes))
	}
	_, err := fmt.Fprintf(w, "%-12s %14d B  placed by %s%s\n"+
		"%-12s %14d B  LOAD of the %s schedule\n"+
		"%-12s %14d B  LOAD of the file order, nothing shared\n"+
		"%-12s %14d B  every tensor in a slot of its own\n"+
		"%d steps, %d tensors, alignment %d\n\n",
		"arena", r.ActivationBytes, r.Heuristic, over,
		"lower bound", r.LowerBoundBytes, cmp.Or(r.Schedule, "given"),
		"file order", r.FileOrderLowerBoundBytes,
		"naive", r.NaiveBytes,
		r.Steps, len(r.Tensors), r.Alignment)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "start\tend\toffset\tsize\top\ttensor")
	for _, t := range r.Tensors {
		name := t.Name
		if t.Alias != "" {
			name += " (view of " + t.Alias + ")"
		}
		if t.InPlaceOf != "" {
			name += " (in place of " + t.InPlaceOf + ")"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%s\n", t.Start, t.End, t.Offset, t.Size, t.Op, name)
	}
	return tw.Flush()
}

// producerOps names, for each tensor of p, the op of the step that writes
// it, or "input" for an input of the graph.
func producerOps(p *Problem) []string {
	op := make([]string, len(p.Tensors))
	for _, id := range p.Inputs {
		op[id] = "input"
	}
	for s := range p.Steps {
		for _, id := range p.Steps[s].Outputs {
			op[id] = p.Steps[s].Op
		}
	}
	return op
}
