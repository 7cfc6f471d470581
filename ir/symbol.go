package ir

import (
	"strconv"
	"strings"
)

// Dim is one dimension of a declared shape: a size, or open (Size -1),
// then usually named by a symbol as the model file names it ("batch",
// "seq", "p2o.DynamicDimension.0"). Two dimensions with the same symbol
// are the same size in every run; an open dimension without a symbol is
// its own.
type Dim struct {
	Size   int64
	Symbol string
}

// Open reports whether the dimension's size is known only at run time.
func (d Dim) Open() bool { return d.Size < 0 }

func (d Dim) String() string {
	switch {
	case !d.Open():
		return strconv.FormatInt(d.Size, 10)
	case d.Symbol != "":
		return d.Symbol
	}
	return "?"
}

// DeclaredShape is a shape as a model file declares it, with dimensions
// that may be open. A nil DeclaredShape with Ranked false has no known
// rank.
type DeclaredShape []Dim

// Static returns the shape when no dimension is open.
func (s DeclaredShape) Static() (Shape, bool) {
	out := make(Shape, len(s))
	for i, d := range s {
		if d.Open() {
			return nil, false
		}
		out[i] = d.Size
	}
	return out, true
}

// Symbols lists the symbols of the open dimensions, in order, each once.
func (s DeclaredShape) Symbols() []string {
	var out []string
	for _, d := range s {
		if d.Open() && d.Symbol != "" && !contains(out, d.Symbol) {
			out = append(out, d.Symbol)
		}
	}
	return out
}

func (s DeclaredShape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(d.String())
	}
	b.WriteByte(']')
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Declare is the declared shape of a static shape.
func Declare(s Shape) DeclaredShape {
	out := make(DeclaredShape, len(s))
	for i, d := range s {
		out[i] = Dim{Size: d}
	}
	return out
}
