package ir

import (
	"fmt"
	"slices"
	"strings"
)

// Einsum is a parsed Einsum equation, its ellipses expanded against the
// operands' ranks: each operand's axes and the output's axes as indices
// into Sizes.
type Einsum struct {
	Operands [][]int // label index of every axis of every operand
	Output   []int   // label index of every output axis
	Sizes    []int64 // size of every label
}

// ParseEinsum parses an Einsum equation ("ij,jk->ik", "...ii->...i",
// implicit output "ij,jk") for operands of the given shapes.
func ParseEinsum(eq string, shapes []Shape) (*Einsum, error) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(shapes) {
		return nil, fmt.Errorf("equation %q has %d operands, the node %d", eq, len(terms), len(shapes))
	}
	e := &Einsum{}
	index := map[string]int{}
	label := func(l string, size int64) (int, error) {
		i, ok := index[l]
		if !ok {
			i = len(e.Sizes)
			index[l] = i
			e.Sizes = append(e.Sizes, size)
		} else if e.Sizes[i] != size && size != 1 && e.Sizes[i] != 1 {
			return 0, fmt.Errorf("label %s has sizes %d and %d", l, e.Sizes[i], size)
		} else if size > e.Sizes[i] {
			e.Sizes[i] = size
		}
		return i, nil
	}
	counts := map[string]int{}
	ellipsis := 0
	for k, term := range terms {
		letters, dots := splitTerm(term)
		r := shapes[k].Rank()
		n := r - len(letters)
		if n < 0 || (!dots && n != 0) {
			return nil, fmt.Errorf("term %q does not fit rank %d", term, r)
		}
		if dots {
			ellipsis = max(ellipsis, n)
		}
		var axes []int
		pos := 0
		for _, part := range expandTerm(term, n) {
			i, err := label(part, shapes[k][pos])
			if err != nil {
				return nil, err
			}
			axes = append(axes, i)
			counts[part]++
			pos++
		}
		e.Operands = append(e.Operands, axes)
	}
	var out []string
	if explicit {
		out = expandTerm(rhs, ellipsis)
	} else {
		for d := 0; d < ellipsis; d++ {
			out = append(out, fmt.Sprintf(".%d", ellipsis-d))
		}
		var once []string
		for l, c := range counts {
			if c == 1 && !strings.HasPrefix(l, ".") {
				once = append(once, l)
			}
		}
		slices.Sort(once)
		out = append(out, once...)
	}
	for _, l := range out {
		i, ok := index[l]
		if !ok {
			return nil, fmt.Errorf("output label %s appears in no operand", l)
		}
		e.Output = append(e.Output, i)
	}
	return e, nil
}

// splitTerm returns a term's letters and whether it has an ellipsis.
func splitTerm(term string) (string, bool) {
	letters := strings.ReplaceAll(term, "...", "")
	return letters, len(letters) != len(term)
}

// expandTerm lists a term's labels, the ellipsis standing for n axes named
// ".n" … ".1" (aligned from the right across operands).
func expandTerm(term string, n int) []string {
	var out []string
	for i := 0; i < len(term); i++ {
		if strings.HasPrefix(term[i:], "...") {
			for d := n; d >= 1; d-- {
				out = append(out, fmt.Sprintf(".%d", d))
			}
			i += 2
			continue
		}
		out = append(out, term[i:i+1])
	}
	return out
}

func init() { register(inferEinsum, "Einsum") }

func inferEinsum(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 1, -1); err != nil {
		return nil, err
	}
	var shapes []Shape
	var first *Tensor
	for i := range n.Inputs {
		t, err := input(g, n, i)
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = t
		} else if err := sameType(first, t); err != nil {
			return nil, err
		}
		shapes = append(shapes, t.Shape)
	}
	e, err := ParseEinsum(n.Attrs.String("equation", ""), shapes)
	if err != nil {
		return nil, err
	}
	out := Shape{}
	for _, l := range e.Output {
		out = append(out, e.Sizes[l])
	}
	return same(first.DType, out), nil
}
