package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// dimFlag collects repeated SYMBOL=N flags.
type dimFlag struct{ m map[string]int64 }

func (d *dimFlag) String() string {
	var parts []string
	for k, v := range d.m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	return strings.Join(parts, ",")
}

func (d *dimFlag) Set(v string) error {
	sym, n, ok := strings.Cut(v, "=")
	if !ok || sym == "" {
		return fmt.Errorf("%q is not SYMBOL=N", v)
	}
	size, err := strconv.ParseInt(n, 10, 64)
	if err != nil || size < 0 {
		return fmt.Errorf("%q: %q is not a size", v, n)
	}
	if d.m == nil {
		d.m = map[string]int64{}
	}
	if _, dup := d.m[sym]; dup {
		return fmt.Errorf("%s given twice", sym)
	}
	d.m[sym] = size
	return nil
}

// parse parses flags that may come before, between or after positional
// arguments (berth run MODEL --input x.npy) and returns the positionals.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseModel parses args and returns the one MODEL argument ("" when it
// is optional and absent).
func parseModel(fs *flag.FlagSet, args []string, optional bool) (string, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return "", err
	}
	return oneModel(pos, optional)
}

// oneModel checks that exactly one MODEL argument was given.
func oneModel(pos []string, optional bool) (string, error) {
	switch {
	case len(pos) == 1:
		return pos[0], nil
	case len(pos) == 0 && optional:
		return "", nil
	case len(pos) == 0:
		return "", usageError{"missing MODEL argument"}
	}
	return "", usageError{fmt.Sprintf("unexpected arguments %q after MODEL", pos[1:])}
}
