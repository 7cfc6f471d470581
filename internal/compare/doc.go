// Package compare measures how far computed values are from reference
// values, the way berth's tests judge outputs against PyTorch's or another
// backend's.
package compare
