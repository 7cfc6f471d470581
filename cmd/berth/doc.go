// Command berth loads, plans, runs and benchmarks machine-learning models.
//
//	berth run   [MODEL] [--input NAME=PATH | --input PATH]... [--output-dir DIR] [--device cpu|cuda] [--dim S=N]... [--max-dim S=N]... [--json]
//	berth plan  MODEL [--json] [--svg FILE] [--device cpu|cuda] [--dim S=N]... [--max-dim S=N]...
//	berth bench MODEL [--input ...] [--iters N] [--warmup N] [--threads N] [--device ...] [--dim ...] [--max-dim ...] [--json]
//	berth info  MODEL [--json] [--dim S=N]...
//
// Without MODEL, run uses the small Fashion-MNIST classifier embedded in the
// binary. Dimensions a model leaves open take their sizes from the inputs
// of each run; --dim fixes them ahead of time and --max-dim bounds them. Errors are printed as one line on stderr with a non-zero exit.
package main
