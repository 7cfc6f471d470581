// Package weightstest holds what the tests of the weight file formats
// share: reading fixtures, seeding fuzz tests with them, and checking
// that hostile files are refused, cheaply, with the right error.
package weightstest
