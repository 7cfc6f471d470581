package plan

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
)

// WriteSVG draws pl, a plan of p, as a picture of the arena: steps run left
// to right, bytes bottom to top, and every root is a rectangle over the
// steps its slot is reserved, coloured by the operator that writes it and
// titled with its name, so that a browser shows it on hover. A line traces
// the bytes live at each step; its peak is LOAD.
func WriteSVG(w io.Writer, p *Problem, pl *Plan) error {
	const (
		width, height = 1200.0, 640.0
		left, top     = 10.0, 40.0
		plotW, plotH  = width - 2*left, height - top - 10
	)
	n := len(p.Tensors)
	if len(pl.Offsets) != n || len(pl.Start) != n || len(pl.End) != n || pl.Alignment <= 0 {
		return fmt.Errorf("plan: WriteSVG: the plan is not one of this problem")
	}
	steps := max(len(pl.Order), 1)
	bytes := max(pl.ArenaBytes, 1)
	x := func(t int) float64 { return left + plotW*float64(t)/float64(steps) }
	y := func(b int64) float64 { return top + plotH - plotH*float64(b)/float64(bytes) }

	op := producerOps(p)

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="13">`+"\n", width, height)
	fmt.Fprintf(bw, `<text x="%g" y="20">arena %d B, lower bound (LOAD) %d B, %d steps, %d tensors, placed by %s</text>`+"\n",
		left, pl.ArenaBytes, pl.LoadBytes, len(pl.Order), len(p.Tensors), escape(pl.Heuristic))
	fmt.Fprintf(bw, `<rect x="%g" y="%g" width="%g" height="%g" fill="#f4f4f4" stroke="#999"/>`+"\n", left, top, plotW, plotH)

	for i := range p.Tensors {
		t := &p.Tensors[i]
		slot := AlignUp(t.Size, pl.Alignment)
		if t.IsView() || slot == 0 {
			continue
		}
		fmt.Fprintf(bw, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s" stroke="#333" stroke-width="0.3"><title>%s (%s): %d B at %d, steps %d-%d</title></rect>`+"\n",
			x(pl.Start[i]), y(pl.Offsets[i]+slot), x(pl.End[i]+1)-x(pl.Start[i]), y(pl.Offsets[i])-y(pl.Offsets[i]+slot),
			colour(op[i]), escape(t.Name), escape(op[i]), t.Size, pl.Offsets[i], pl.Start[i], pl.End[i])
	}

	var line strings.Builder
	for t, b := range pl.Live {
		fmt.Fprintf(&line, "%.2f,%.2f %.2f,%.2f ", x(t), y(b), x(t+1), y(b))
	}
	fmt.Fprintf(bw, `<polyline points="%s" fill="none" stroke="#c00" stroke-width="1.5"><title>bytes live</title></polyline>`+"\n", line.String())
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

// colour gives each operator a colour of its own.
func colour(op string) string {
	h := fnv.New32a()
	h.Write([]byte(op))
	return fmt.Sprintf("hsl(%d,55%%,70%%)", h.Sum32()%360)
}

func escape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
