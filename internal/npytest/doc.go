// Package npytest reads the numbered .npy files of test fixtures
// (input_0.npy, input_1.npy, …) for the tests of several packages.
package npytest
