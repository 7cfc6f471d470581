package driver

import (
	"errors"
	"runtime"
	"sync"
	"unsafe"
)

// kernelGraphLib holds the entry points of graphs built node by node,
// resolved on first use.
var kernelGraphLib struct {
	once                         sync.Once
	err                          error
	create, addKernel, setKernel uintptr
}

func loadKernelGraphs() error {
	if err := loadGraphs(); err != nil {
		return err
	}
	kernelGraphLib.once.Do(func() {
		if _, err := resolve(handle, []symbolRef{
			{&kernelGraphLib.create, "cuGraphCreate"},
			{&kernelGraphLib.addKernel, "cuGraphAddKernelNode_v2"},
			{&kernelGraphLib.setKernel, "cuGraphExecKernelNodeSetParams_v2"},
		}); err != nil {
			kernelGraphLib.err = ErrNoGraphs
		}
	})
	return kernelGraphLib.err
}

// kernelNodeParams is CUDA_KERNEL_NODE_PARAMS_v2: the function, its grid
// and block, its shared memory and its arguments (kern and ctx left
// zero: the function's own, in the current context).
type kernelNodeParams struct {
	fn            uintptr
	grid, block   [3]uint32
	shared        uint32
	_             uint32
	params, extra uintptr
	kern, ctx     uintptr
}

// A KernelGraph is a graph of kernel launches one after another, built
// node by node so that each launch's node is known: an instantiated one
// takes new grids and arguments for its nodes (SetKernel) without being
// captured or instantiated again. It is used on the owner thread only.
type KernelGraph struct {
	g     uintptr
	nodes []uintptr
	exec  Graph
	p     kernelNodeParams
}

// NewKernelGraph starts an empty graph.
func NewKernelGraph() (*KernelGraph, error) {
	if err := loadKernelGraphs(); err != nil {
		return nil, err
	}
	k := &KernelGraph{}
	if err := call(kernelGraphLib.create, uintptr(unsafe.Pointer(&k.g)), 0); err != nil {
		return nil, err
	}
	return k, nil
}

// set fills k.p for a launch of f; params (one pointer to each argument's
// value) must live until the call that reads k.p returns.
func (k *KernelGraph) set(f Function, grid, block [3]uint32, shared uint32, params []unsafe.Pointer) {
	k.p = kernelNodeParams{fn: uintptr(f), grid: grid, block: block, shared: shared}
	if len(params) > 0 {
		k.p.params = uintptr(unsafe.Pointer(&params[0]))
	}
}

// Add appends a launch of f that runs after the one added before it. The
// arguments' values are copied into the graph.
func (k *KernelGraph) Add(f Function, grid, block [3]uint32, shared uint32, params []unsafe.Pointer) error {
	if k.exec != 0 {
		return errors.New("kernel graph: a launch added after Instantiate")
	}
	var dep, ndep uintptr
	if n := len(k.nodes); n > 0 {
		dep, ndep = uintptr(unsafe.Pointer(&k.nodes[n-1])), 1
	}
	k.set(f, grid, block, shared, params)
	var node uintptr
	err := call(kernelGraphLib.addKernel, uintptr(unsafe.Pointer(&node)), k.g, dep, ndep, uintptr(unsafe.Pointer(&k.p)))
	runtime.KeepAlive(params)
	if err != nil {
		return err
	}
	k.nodes = append(k.nodes, node)
	return nil
}

// Len is the number of launches.
func (k *KernelGraph) Len() int { return len(k.nodes) }

// Instantiate makes the graph executable.
func (k *KernelGraph) Instantiate() error {
	if k.exec != 0 {
		return nil
	}
	return call(graphLib.instantiate, uintptr(unsafe.Pointer(&k.exec)), k.g, 0)
}

// SetKernel gives launch i of the instantiated graph a new function,
// grid, block, shared memory and arguments, for the launches after this
// call (those queued already keep theirs).
func (k *KernelGraph) SetKernel(i int, f Function, grid, block [3]uint32, shared uint32, params []unsafe.Pointer) error {
	if k.exec == 0 {
		return errors.New("kernel graph: SetKernel before Instantiate")
	}
	if i < 0 || i >= len(k.nodes) {
		return errors.New("kernel graph: no such launch")
	}
	k.set(f, grid, block, shared, params)
	err := call(kernelGraphLib.setKernel, uintptr(k.exec), k.nodes[i], uintptr(unsafe.Pointer(&k.p)))
	runtime.KeepAlive(params)
	return err
}

// Launch queues the instantiated graph on s.
func (k *KernelGraph) Launch(s Stream) error { return k.exec.Launch(s) }

// Destroy frees the graph and its executable form.
func (k *KernelGraph) Destroy() error {
	err := k.exec.Destroy()
	if k.g != 0 {
		if derr := call(graphLib.destroy, k.g); err == nil {
			err = derr
		}
	}
	k.g, k.exec, k.nodes = 0, 0, nil
	return err
}
