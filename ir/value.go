package ir

import (
	"errors"
	"fmt"
)

// ErrValueDependent is wrapped by the errors of shape inference and
// kernel building for a tensor whose value decides a shape (a Reshape's
// target, a NonZero's input, a TopK's k) but is known only at run time.
// A caller that can learn the value (the graph inputs it depends on are
// given) specialises the graph on it and tries again.
var ErrValueDependent = errors.New("a shape depends on a value known only at run time")

// ValueError names the tensor whose value a shape depends on.
type ValueError struct {
	Tensor string // the tensor's name
	Why    string // what needs it, for people
	// Cause, when not nil, is what fails while the value is unknown (the
	// error of an If's branch that cannot be inferred): the error to
	// report when the value cannot be learnt.
	Cause error
}

func (e *ValueError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s %q must be a constant (%v): %v", e.Why, e.Tensor, e.Cause, ErrValueDependent)
	}
	return fmt.Sprintf("%s %q must be a constant: %v", e.Why, e.Tensor, ErrValueDependent)
}

// Unwrap makes errors.Is(err, ErrValueDependent) hold. The cause is not
// unwrapped: a value it waits for comes second to this one.
func (e *ValueError) Unwrap() error { return ErrValueDependent }

// NeedValue is the error for a shape that depends on the value of the
// tensor called name; why says what needs it ("input", "scales", …).
func NeedValue(why, name string) error { return &ValueError{Tensor: name, Why: why} }
