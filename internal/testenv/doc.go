// Package testenv decides what tests do when optional test data is absent:
// skip with a line saying how to get it, or, when BERTH_REQUIRE_TESTDATA=1
// (as in CI), fail. For the tests of ONNX's conformance suites it also
// lists the cases, reads the lists of cases expected to fail, checks each
// outcome against such a list and tallies the outcomes.
package testenv
