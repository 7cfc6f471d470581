package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// TestStripRawData checks the wire walk against proto.Unmarshal: the
// stripped model plus the recorded windows must decode to exactly the
// original model.
func TestStripRawData(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/models/*/model.onnx")
	paths = append(paths, "testdata/mixed.onnx", "testdata/external/model.onnx")
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want onnxpb.ModelProto
		if err := proto.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		stripped, windows, err := stripRawData(b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var got onnxpb.ModelProto
		if err := proto.Unmarshal(stripped, &got); err != nil {
			t.Fatalf("%s: the stripped model does not decode: %v", path, err)
		}
		inits := got.GetGraph().GetInitializer()
		if len(windows) != len(inits) {
			t.Fatalf("%s: %d windows for %d initializers", path, len(windows), len(inits))
		}
		removed := 0
		for i, w := range windows {
			if inits[i].RawData != nil {
				t.Errorf("%s: initializer %q kept its raw_data", path, inits[i].GetName())
			}
			if w.ok {
				inits[i].RawData = b[w.off:w.end]
				removed += w.end - w.off
			}
		}
		if !proto.Equal(&got, &want) {
			t.Errorf("%s: stripped model plus windows differs from the original", path)
		}
		if removed > 0 && len(stripped) >= len(b)-removed+64*len(windows) {
			t.Errorf("%s: stripped model is %d bytes, original %d with %d raw bytes", path, len(stripped), len(b), removed)
		}
	}
}

func TestStripRawDataMalformed(t *testing.T) {
	good, err := os.ReadFile("testdata/mixed.onnx")
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n < len(good); n += 7 {
		// Every prefix either fails cleanly or yields windows inside it.
		_, windows, err := stripRawData(good[:n])
		if err != nil {
			continue
		}
		for _, w := range windows {
			if w.ok && (w.off < 0 || w.end > n || w.off > w.end) {
				t.Fatalf("prefix %d: window %+v outside the data", n, w)
			}
		}
	}
	// A model without raw data is returned as is.
	plain := marshal(t, model(13, reluGraph()))
	out, _, err := stripRawData(plain)
	if err != nil || !bytes.Equal(out, plain) || &out[0] != &plain[0] {
		t.Errorf("a model without raw data was rewritten")
	}
}
