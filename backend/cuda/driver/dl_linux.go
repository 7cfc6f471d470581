package driver

import "github.com/ebitengine/purego"

// openLibrary opens the shared library name with every symbol bound now
// and visible to the libraries it loads after.
func openLibrary(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// symbol is the address of name in the library h.
func symbol(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// cCall calls the C function at fn with args and returns its result
// register. Whatever a pointer converted to a uintptr in the call's
// arguments points to is moved to the heap and kept alive for the call.
//
//go:uintptrescapes
func cCall(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// cCallDouble calls the C function at fn, which takes three integer
// arguments then a double, and returns its result register. It is for
// setting up (it allocates): SyscallN passes no floating-point argument
// apart from the integers.
func cCallDouble(fn uintptr, a, b, c uintptr, d float64) uintptr {
	var f func(uintptr, uintptr, uintptr, float64) uintptr
	purego.RegisterFunc(&f, fn)
	return f(a, b, c, d)
}
