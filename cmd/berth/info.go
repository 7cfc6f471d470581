package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/berth-ml/berth"
)

func cmdInfo(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the description as JSON")
	var dims dimFlag
	fs.Var(&dims, "dim", "describe the model with the open dimension `SYMBOL=N` fixed; repeat for several")
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
	if len(dims.m) > 0 {
		// Describe the model as it is compiled with those sizes.
		exe, err := berth.Compile(m, berth.CPU, berth.Options{Dims: dims.m})
		if err != nil {
			return err
		}
		defer exe.Close()
		if exe.Open() {
			return usageError{fmt.Sprintf("--dim: the shapes stay open; fix every symbol (%s)", strings.Join(m.Symbols(), ", "))}
		}
		info = exe.Model().Info()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	fmt.Fprintf(stdout, "model     %s\n", path)
	if info.Producer != "" {
		fmt.Fprintf(stdout, "producer  %s\n", info.Producer)
	}
	if len(info.Opsets) > 0 {
		fmt.Fprint(stdout, "opsets   ")
		for _, d := range berth.SortedOps(intMap(info.Opsets)) {
			name := d
			if name == "" {
				name = "ai.onnx"
			}
			fmt.Fprintf(stdout, " %s %d", name, info.Opsets[d])
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintln(stdout, "inputs")
	for _, t := range info.Inputs {
		fmt.Fprintf(stdout, "  %-24s %s\n", t.Name, describe(t))
	}
	fmt.Fprintln(stdout, "outputs")
	for _, t := range info.Outputs {
		fmt.Fprintf(stdout, "  %-24s %s\n", t.Name, describe(t))
	}
	if len(info.Symbols) > 0 {
		fmt.Fprintf(stdout, "symbols   %s (bound from the inputs of each run; fix with --dim SYMBOL=N)\n", strings.Join(info.Symbols, ", "))
	} else if info.Open {
		fmt.Fprintln(stdout, "shapes    follow from input values: planned per run")
	}
	fmt.Fprintf(stdout, "weights   %s (%d bytes)\n", humanBytes(info.WeightBytes), info.WeightBytes)
	if len(info.WeightTypes) > 0 {
		for _, typ := range slices.Sorted(maps.Keys(info.WeightTypes)) {
			fmt.Fprintf(stdout, "  %-24s %s\n", typ, humanBytes(info.WeightTypes[typ]))
		}
		if len(info.Metadata) > 0 {
			fmt.Fprintln(stdout, "metadata")
		}
		for _, kv := range info.Metadata {
			v := kv.Value
			if len(v) > 100 {
				v = v[:97] + "..."
			}
			fmt.Fprintf(stdout, "  %-40s %s\n", kv.Key, v)
		}
		return nil
	}
	if info.Open {
		fmt.Fprintf(stdout, "nodes     %d in the file (folded once the shapes are known)\n", info.FileNodes)
		fmt.Fprintln(stdout, "ops")
		for _, op := range berth.SortedOps(info.FileOps) {
			fmt.Fprintf(stdout, "  %-24s %5d\n", op, info.FileOps[op])
		}
		return nil
	}
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
