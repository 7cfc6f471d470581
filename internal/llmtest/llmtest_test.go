package llmtest

import (
	"os"
	"testing"
)

// manifests are the committed fixtures' and, when BERTH_LLM_DATA names a
// folder, a large model's.
func manifests(t *testing.T) []*Manifest {
	t.Helper()
	dirs := []string{Dir()}
	if d := os.Getenv(EnvLarge); d != "" {
		dirs = append(dirs, d)
	}
	var out []*Manifest
	for _, d := range dirs {
		m, err := Load(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// Every reference has the shapes its manifest says, its prompt and
// continuation are tokens of the vocabulary, and the continuation is
// greedy: each token is the argmax of the logits before it.
func TestReferences(t *testing.T) {
	for _, m := range manifests(t) {
		if len(m.Models) == 0 {
			t.Errorf("%s: no models", m.Dir)
		}
		for _, model := range m.Models {
			t.Run(model.Name, func(t *testing.T) {
				l, err := m.Logits(model)
				if err != nil {
					t.Fatal(err)
				}
				for _, ids := range [][]int32{l.Tokens, l.Greedy} {
					for _, id := range ids {
						if id < 0 || int(id) >= model.HParams.Vocab {
							t.Errorf("token %d outside the vocabulary of %d", id, model.HParams.Vocab)
						}
					}
				}
				if len(l.Tokens)+len(l.Greedy) > model.HParams.Ctx {
					t.Errorf("%d prompt and %d greedy tokens overflow the context of %d",
						len(l.Tokens), len(l.Greedy), model.HParams.Ctx)
				}
				want := Argmax(l.PrefillRow(len(l.Tokens) - 1))
				for k, g := range l.Greedy {
					if int(g) != want {
						t.Errorf("greedy token %d is %d, the argmax before it %d", k, g, want)
					}
					if int(g) != model.Reference.GreedyTokens[k] {
						t.Errorf("greedy token %d is %d, the manifest says %d", k, g, model.Reference.GreedyTokens[k])
					}
					want = Argmax(l.DecodeRow(k))
				}
			})
		}
	}
}
