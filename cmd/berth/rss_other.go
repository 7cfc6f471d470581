//go:build !unix

package main

// peakRSSMB is not measured on this platform.
func peakRSSMB() float64 { return 0 }
