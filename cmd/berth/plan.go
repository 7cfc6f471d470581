package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/berth-ml/berth/plan"
)

// planSummary is the JSON of `berth plan --json` (the CLI contract).
type planSummary struct {
	Model                    string  `json:"model"`
	Device                   string  `json:"device"`
	Nodes                    int     `json:"nodes"`
	Tensors                  int     `json:"tensors"`
	WeightBytes              int64   `json:"weight_bytes"`
	ActivationBytes          int64   `json:"activation_bytes"`
	LowerBoundBytes          int64   `json:"lower_bound_bytes"`
	FileOrderLowerBoundBytes int64   `json:"file_order_lower_bound_bytes"`
	NaiveBytes               int64   `json:"naive_bytes"`
	PlanMS                   float64 `json:"plan_ms"`
	Verified                 bool    `json:"verified"`
	Alignment                int64   `json:"alignment"`
	Heuristic                string  `json:"heuristic"`
}

func cmdPlan(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	var c common
	c.register(fs, false)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	svg := fs.String("svg", "", "draw the plan into `FILE` (SVG)")
	path, err := parseModel(fs, args, false)
	if err != nil {
		return err
	}
	if len(c.maxDims.m) > 0 {
		// One plan serves every run within the bound: it is the plan
		// made at the bound.
		if c.dims.m == nil {
			c.dims.m = map[string]int64{}
		}
		for sym, n := range c.maxDims.m {
			if _, fixed := c.dims.m[sym]; !fixed {
				c.dims.m[sym] = n
			}
		}
	}
	m, exe, err := c.compile(path)
	if err != nil {
		return err
	}
	defer m.Close()
	if exe.Open() {
		if syms := m.Symbols(); len(syms) > 0 {
			return usageError{fmt.Sprintf("the model's shapes are open: fix each of its symbols (%s) with --dim SYMBOL=N or bound it with --max-dim SYMBOL=N", strings.Join(syms, ", "))}
		}
		return fmt.Errorf("the model's shapes follow from the values of its inputs; plan it by running it (berth run, berth bench)")
	}
	p, pl := exe.Plan()
	// Compile already refuses a plan that fails verification; check again
	// here so the report states what it saw.
	verr := plan.Verify(p, pl)
	sum := planSummary{
		Model: path, Device: string(exe.Device()),
		Nodes: len(p.Steps), Tensors: len(p.Tensors),
		WeightBytes:              exe.WeightBytes(),
		ActivationBytes:          pl.ArenaBytes,
		LowerBoundBytes:          pl.LoadBytes,
		FileOrderLowerBoundBytes: pl.FileOrderLoadBytes,
		NaiveBytes:               pl.NaiveBytes,
		PlanMS:                   ms(exe.PlanTime()),
		Verified:                 verr == nil,
		Alignment:                pl.Alignment,
		Heuristic:                pl.Heuristic,
	}
	if *svg != "" {
		f, err := os.Create(*svg)
		if err != nil {
			return err
		}
		if err := plan.WriteSVG(f, p, pl); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return err
		}
	} else {
		if err := pl.Report(p).WriteText(stdout); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nweights %d B, plan built in %.2f ms, verified %v\n", sum.WeightBytes, sum.PlanMS, sum.Verified)
		if *svg != "" {
			fmt.Fprintf(stdout, "picture written to %s\n", *svg)
		}
	}
	if verr != nil {
		return fmt.Errorf("plan failed verification: %w", verr)
	}
	return nil
}
