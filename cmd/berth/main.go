package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `berth — compile a model into one planned arena and run it

usage:
  berth run   [MODEL] [--input NAME=PATH | --input PATH]... [--output-dir DIR] [--device cpu|cuda] [--precision P] [--threads N] [--dim S=N]... [--max-dim S=N]... [--plans N] [--json]
  berth plan  MODEL [--json] [--svg FILE] [--device cpu|cuda] [--dim S=N]... [--max-dim S=N]...
  berth bench MODEL [--input ...] [--iters N] [--warmup N] [--threads N] [--device cpu|cuda] [--precision P] [--dim S=N]... [--max-dim S=N]... [--plans N] [--json] [--profile]
  berth info  MODEL [--json] [--dim S=N]...
  berth generate MODEL (--prompt TEXT | --tokens IDS) [-n N] [--ctx N] [--temp T] [--top-k K] [--top-p P] [--min-p P]
                 [--repeat-penalty R] [--seed S] [--stop STRING]... [--ignore-eos] [--logits-out FILE.npy] [--threads N] [--json]

MODEL is an ONNX file, or a language model: a GGUF file or a Hugging Face
checkpoint (a .safetensors file, or its folder with config.json and
tokenizer.json), which generate runs and run takes a prompt's logits of.
Inputs are .npy files or ONNX TensorProto .pb files (a sequence input a
SequenceProto .pb file); --input PATH without a name binds the graph
inputs in order. Without MODEL, run uses the Fashion-MNIST
classifier embedded in the binary.

Dimensions the model leaves open (berth info shows their symbols) take
their sizes from the inputs of each run; a session plans each set of
shapes once and keeps --plans of them. --dim S=N fixes symbol S ahead of
time; --max-dim S=N plans once at that bound and refuses larger runs.
`

// usageError marks mistakes in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A panic is a bug in berth; still report it as one line.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "berth: internal error: %v\n", r)
			code = 3
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], stdout)
	case "plan":
		err = cmdPlan(args[1:], stdout)
	case "bench":
		err = cmdBench(args[1:], stdout, stderr)
	case "info":
		err = cmdInfo(args[1:], stdout)
	case "generate":
		err = cmdGenerate(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usageError{fmt.Sprintf("unknown command %q (want run, plan, bench, info or generate)", args[0])}
	}
	if err == nil {
		return 0
	}
	// Errors of the library that name the job already ("generate: …")
	// are not prefixed with it twice.
	fmt.Fprintf(stderr, "berth %s: %s\n", args[0], strings.TrimPrefix(oneLine(err.Error()), args[0]+": "))
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
