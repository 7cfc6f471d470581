package plan_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/berth-ml/berth/plan"
)

func TestReport(t *testing.T) {
	p := smallProblem()
	pl := check(t, p, plan.Options{})
	r := pl.Report(p)

	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"activation_bytes", "lower_bound_bytes", "file_order_lower_bound_bytes", "naive_bytes", "alignment", "heuristic", "tensors"} {
		if _, ok := back[key]; !ok {
			t.Errorf("JSON has no %q: %s", key, data)
		}
	}
	tensors := back["tensors"].([]any)
	if len(tensors) != len(p.Tensors) {
		t.Fatalf("%d tensors in the report, %d in the problem", len(tensors), len(p.Tensors))
	}
	view := tensors[3].(map[string]any)
	if view["alias"] != "t1" || view["op"] != "Reshape" || view["offset"].(float64) != float64(pl.Offsets[3]) {
		t.Errorf("view reported as %v", view)
	}
	if in := tensors[0].(map[string]any); in["op"] != "input" || in["alias"] != nil {
		t.Errorf("input reported as %v", in)
	}

	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"arena", "lower bound", "+0.0% over", "start", "Reshape", "t3 (view of t1)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	if lines := strings.Count(text.String(), "\n"); lines != 5+1+1+len(p.Tensors) {
		t.Errorf("text report has %d lines:\n%s", lines, text.String())
	}
}

func TestWriteSVG(t *testing.T) {
	p := smallProblem()
	p.Tensors[0].Name = `<x & "y">` // names are escaped
	pl := check(t, p, plan.Options{})
	var buf bytes.Buffer
	if err := plan.WriteSVG(&buf, p, pl); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	rects := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	if want := 1 + 4; rects != want { // the plot area and the four roots
		t.Fatalf("%d rectangles, want %d", rects, want)
	}
}

// TestLivePeakIsLoad: the curve the picture draws peaks at LOAD, with
// in-place takeovers counted once, and covers every step.
func TestLivePeakIsLoad(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 77))
		p := randomProblem(rng, 5+rng.IntN(60))
		pl, err := plan.Build(p, plan.Options{})
		if err != nil {
			continue
		}
		if len(pl.Live) != len(pl.Order) {
			t.Fatalf("seed %d: %d points for %d steps", seed, len(pl.Live), len(pl.Order))
		}
		var peak int64
		for _, b := range pl.Live {
			peak = max(peak, b)
		}
		if peak != pl.LoadBytes {
			t.Fatalf("seed %d: the curve peaks at %d, LOAD is %d", seed, peak, pl.LoadBytes)
		}
	}
}
