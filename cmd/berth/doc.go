// Command berth loads, plans, runs and benchmarks machine-learning models.
//
//	berth run   [MODEL] [--input NAME=PATH | --input PATH]... [--output-dir DIR] [--device cpu|cuda] [--json]
//	berth plan  MODEL [--json] [--svg FILE] [--device cpu|cuda]
//	berth bench MODEL [--input ...] [--iters N] [--warmup N] [--threads N] [--device ...] [--json]
//	berth info  MODEL
//
// Without MODEL, run uses the small Fashion-MNIST classifier embedded in the
// binary. Errors are printed as one line on stderr with a non-zero exit.
package main
