// Package testenv decides what tests do when optional test data is absent:
// skip with a line saying how to get it, or, when BERTH_REQUIRE_TESTDATA=1
// (as in CI), fail. It also lists the cases of ONNX's conformance suites
// and reads the lists of cases expected to fail.
package testenv
