package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/ir"
)

func cmdInfo(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the description as JSON")
	path, err := parseModel(fs, args, false)
	if err != nil {
		return err
	}
	m, err := berth.Load(path)
	if err != nil {
		return err
	}
	defer m.Close()
	info := m.Info()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	fmt.Fprintf(stdout, "model     %s\n", path)
	if info.Producer != "" {
		fmt.Fprintf(stdout, "producer  %s\n", info.Producer)
	}
	fmt.Fprint(stdout, "opsets   ")
	for _, d := range berth.SortedOps(intMap(info.Opsets)) {
		name := d
		if name == "" {
			name = "ai.onnx"
		}
		fmt.Fprintf(stdout, " %s %d", name, info.Opsets[d])
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "inputs")
	for _, t := range info.Inputs {
		fmt.Fprintf(stdout, "  %-24s %s%v\n", t.Name, t.DType, ir.Shape(t.Shape))
	}
	fmt.Fprintln(stdout, "outputs")
	for _, t := range info.Outputs {
		fmt.Fprintf(stdout, "  %-24s %s%v\n", t.Name, t.DType, ir.Shape(t.Shape))
	}
	fmt.Fprintf(stdout, "weights   %s (%d bytes)\n", humanBytes(info.WeightBytes), info.WeightBytes)
	fmt.Fprintf(stdout, "nodes     %d in the file, %d after constant folding\n", info.FileNodes, info.Nodes)
	fmt.Fprintln(stdout, "ops (file → after folding)")
	for _, op := range berth.SortedOps(info.FileOps) {
		fmt.Fprintf(stdout, "  %-24s %5d → %d\n", op, info.FileOps[op], info.Ops[op])
	}
	return nil
}

func intMap(m map[string]int64) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = int(v)
	}
	return out
}

// humanBytes formats a byte count with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n), "B"
	for _, next := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if v < unit {
			break
		}
		v, u = v/unit, next
	}
	return fmt.Sprintf("%.1f %s", v, u)
}
