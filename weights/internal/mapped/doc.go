// Package mapped holds what the weight file formats share about their
// files: mapping one read-only and parsing the mapping, errors that name
// the format, releasing the mapping once, and counting a tensor's
// elements.
package mapped
