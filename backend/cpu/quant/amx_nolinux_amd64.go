//go:build !noasm && !linux

package quant

// amxPermit: only Linux is asked for the tile state here.
func amxPermit() bool { return false }
