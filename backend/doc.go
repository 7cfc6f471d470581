// Package backend is the contract between berth's device-independent
// pipeline (loading, shape inference, folding, planning; the root
// package) and the devices that run a plan. A device implements four
// things:
//
//	Device      Compile(graph, Options) → Executable   kernels bound to a verified plan, weights placed
//	            NewWeights(files) → Weights            weights the executables of one model share
//	            NewLane(executables, from, keep)       an arena (and workers, or a stream) sessions share
//	            Caps()                                 alignment, where the arena lives
//	Executable  NewSession(lane) → Session             nil lane: a lane of its own
//	            Plan, Layout, ArenaBytes, WeightBytes, PackedWeightBytes, PlanTime, Close
//	Session     Inputs, Outputs                        host buffers a run reads and fills
//	            Run(ctx, times), Profile(times)        plan order, nothing allocated
//	            Arena() arena.Arena                    the arena contract (typed and byte-range I/O)
//	            Close
//	Lane        Bytes, Close
//
// The graph a device compiles is shape-inferred and folded, its constants
// windows of the model file; Options carries what every device honours
// (threads, precision, the schedule, in-place placement, a shared weight
// store, the plan at a bound, the memory-limit check) and each device
// reads its own tuning from its Device value. Every device plans with
// plan.Build (or plan.Refit at a bound), verifies with plan.Verify and
// binds slots through LayoutOf, so that one plan means the same offsets
// everywhere. A kernel's failure during Run wraps ErrKernel.
package backend
