package onnx

import (
	"container/heap"
	"fmt"

	"github.com/berth-ml/berth/ir"
)

// topoSort orders nodes so that every node comes after the producers of its
// inputs (Kahn's algorithm). Among the nodes that are ready it always takes
// the one that comes first in the file, so a file that is already sorted
// keeps its order. A cycle is an error naming one of its nodes.
func topoSort(g *ir.Graph, nodes []ir.Node) ([]ir.Node, error) {
	producer := make(map[ir.TensorID]int)
	for i := range nodes {
		for _, out := range nodes[i].Outputs {
			if out != ir.NoTensor {
				producer[out] = i
			}
		}
	}
	waiting := make([]int, len(nodes)) // unfinished producers per node
	users := make([][]int, len(nodes)) // nodes reading some output of node i
	seen := make([]int, len(nodes))    // seen[p] == i+1: p already counted for node i
	for i := range nodes {
		for _, in := range nodes[i].Inputs {
			p, ok := producer[in]
			if !ok || seen[p] == i+1 {
				continue
			}
			seen[p] = i + 1
			waiting[i]++
			users[p] = append(users[p], i)
		}
	}
	ready := &intHeap{}
	for i := range nodes {
		if waiting[i] == 0 {
			heap.Push(ready, i)
		}
	}
	sorted := make([]ir.Node, 0, len(nodes))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		sorted = append(sorted, nodes[i])
		for _, u := range users[i] {
			if waiting[u]--; waiting[u] == 0 {
				heap.Push(ready, u)
			}
		}
	}
	if len(sorted) < len(nodes) {
		for i := range nodes {
			if waiting[i] > 0 {
				return nil, fmt.Errorf("the graph has a cycle through node %q (%s)", nodes[i].Name, nodes[i].Op)
			}
		}
	}
	return sorted, nil
}

// intHeap is a min-heap of node indices.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
