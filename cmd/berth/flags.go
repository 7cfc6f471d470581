package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

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
