package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

// TestOpenShapeFlags takes models with open shapes through the command
// line with sizes, bounds and inputs that cannot be: each is a non-zero
// exit and one readable line on stderr naming what is wrong, never a
// panic, within seconds.
func TestOpenShapeFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, g onnxtest.Graph) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, g.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	array := func(name string, dt ir.DType, shape []int64, data []byte) string {
		p := filepath.Join(dir, name)
		if data == nil {
			data = make([]byte, ir.Shape(shape).Bytes(dt))
		}
		if err := npy.WriteFile(p, &npy.Array{DType: dt, Shape: shape, Data: data}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	i64 := func(v ...int64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			for k := range 8 {
				b[8*i+k] = byte(uint64(x) >> (8 * k))
			}
		}
		return b
	}
	add := write("add.onnx", onnxtest.Graph{
		Inputs:  []onnxtest.Input{{Name: "a", Dims: []string{"n"}}, {Name: "b", Dims: []string{"n"}}},
		Nodes:   []onnxtest.Node{{Op: "Add", Inputs: []string{"a", "b"}, Outputs: []string{"y"}}},
		Outputs: []string{"y"},
	})
	reshape := write("reshape.onnx", onnxtest.Graph{
		Inputs:  []onnxtest.Input{{Name: "x", Dims: []string{"n"}}, {Name: "s", Elem: "int64", Dims: []string{"r"}}},
		Nodes:   []onnxtest.Node{{Op: "Reshape", Inputs: []string{"x", "s"}, Outputs: []string{"y"}}},
		Outputs: []string{"y"},
	})
	nonzero := write("nonzero.onnx", onnxtest.Graph{
		Inputs: []onnxtest.Input{{Name: "s", Elem: "int64", Dims: []string{"r"}}},
		Nodes: []onnxtest.Node{
			{Op: "ConstantOfShape", Inputs: []string{"s"}, Outputs: []string{"ones"}, Value: new(float32(1))},
			{Op: "NonZero", Inputs: []string{"ones"}, Outputs: []string{"y"}},
		},
		Outputs: []string{"y"},
	})
	a2 := "a=" + array("a2.npy", ir.Float32, []int64{2}, nil)
	b2 := "b=" + array("b2.npy", ir.Float32, []int64{2}, nil)
	b3 := "b=" + array("b3.npy", ir.Float32, []int64{3}, nil)
	x6 := "x=" + array("x6.npy", ir.Float32, []int64{6}, nil)
	huge := "s=" + array("huge.npy", ir.Int64, []int64{3}, i64(1<<40, 1<<40, 1<<40))
	negative := "s=" + array("negative.npy", ir.Int64, []int64{2}, i64(-2, -3))
	floats := "s=" + array("floats.npy", ir.Float32, []int64{2}, nil)
	bomb := "s=" + array("bomb.npy", ir.Int64, []int64{1}, i64(1<<38))
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"dim negative", []string{"run", add, "--input", a2, "--input", b2, "--dim", "n=-1"}, 2, "not a size"},
		{"dim not a number", []string{"run", add, "--input", a2, "--input", b2, "--dim", "n=two"}, 2, "not a size"},
		{"dim past int64", []string{"run", add, "--input", a2, "--input", b2, "--dim", "n=99999999999999999999"}, 2, "not a size"},
		{"dim without a symbol", []string{"run", add, "--input", a2, "--input", b2, "--dim", "=3"}, 2, "SYMBOL=N"},
		{"dim twice", []string{"run", add, "--input", a2, "--input", b2, "--dim", "n=2", "--dim", "n=3"}, 2, "twice"},
		{"dim of no symbol", []string{"run", add, "--input", a2, "--input", b2, "--dim", "batch=2"}, 1, `"batch"`},
		{"dim disagrees with the inputs", []string{"run", add, "--input", a2, "--input", b2, "--dim", "n=3"}, 1, `"a"`},
		{"dim past max elements", []string{"plan", add, "--dim", "n=1099511627777"}, 1, "n=1099511627777 is not a size"},
		{"dim past memory", []string{"plan", add, "--dim", "n=1099511627776"}, 1, "memory limit"},
		{"max dim negative", []string{"run", add, "--input", a2, "--input", b2, "--max-dim", "n=-5"}, 2, "not a size"},
		{"max dim zero", []string{"run", add, "--input", a2, "--input", b2, "--max-dim", "n=0"}, 1, "above its bound 0"},
		{"max dim exceeded", []string{"run", add, "--input", a2, "--input", b2, "--max-dim", "n=1"}, 1, "above its bound 1"},
		{"max dim past max elements", []string{"run", add, "--input", a2, "--input", b2, "--max-dim", "n=9223372036854775807"}, 1, "not a size"},
		{"max dim past memory", []string{"run", add, "--input", a2, "--input", b2, "--max-dim", "n=1099511627776"}, 1, "memory limit"},
		{"plan max dim past memory", []string{"plan", add, "--max-dim", "n=1099511627776", "--json"}, 1, "memory limit"},
		{"bench max dim past memory", []string{"bench", add, "--max-dim", "n=1099511627776", "--iters", "1"}, 1, "memory limit"},
		{"bench bound of a shape input past memory", []string{"bench", reshape, "--max-dim", "n=1099511627776", "--max-dim", "r=2", "--iters", "1"}, 1, "would need"},
		{"bench dim of a shape input past memory", []string{"bench", reshape, "--dim", "n=274877906944", "--dim", "r=1", "--iters", "1"}, 1, "would need"},
		{"symbol disagrees", []string{"run", add, "--input", a2, "--input", b3}, 1, "another input gives n = 2"},
		{"shape input huge", []string{"run", reshape, "--input", x6, "--input", huge}, 1, "Reshape"},
		{"shape input negative", []string{"run", reshape, "--input", x6, "--input", negative}, 1, "Reshape"},
		{"shape input of floats", []string{"run", reshape, "--input", x6, "--input", floats}, 1, `"s"`},
		{"nonzero of a huge constant", []string{"run", nonzero, "--input", bomb}, 1, "memory limit"},
		{"plans negative", []string{"run", add, "--input", a2, "--input", b3, "--plans", "-3"}, 1, "another input gives"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, out, errs := cli(c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stdout %q, stderr %q", code, c.code, out, errs)
			}
			if errs == "" || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", errs)
			}
			if strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine") {
				t.Errorf("stderr: %s", errs)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr %q lacks %q", errs, c.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			t.Log(strings.TrimSpace(errs))
		})
	}
}
