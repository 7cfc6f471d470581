//go:build !noasm

package quant

import "syscall"

// amxPermit asks Linux for the tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), which a process must hold
// before its first tile instruction; the grant covers every thread of
// the process, for good.
func amxPermit() bool {
	const reqXCompPerm, xtiledata = 0x1023, 18
	_, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, reqXCompPerm, xtiledata, 0)
	return e == 0
}
