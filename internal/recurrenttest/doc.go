// Package recurrenttest builds graphs of one LSTM, GRU or RNN node with
// random weights, for the tests of the backends and of their lowering
// (passes.LowerRecurrent).
package recurrenttest
