// Package berth loads machine-learning models, compiles each once into a
// static plan in which every tensor has a fixed place (its berth) in one
// pre-planned memory arena, and runs them with no allocation per call.
//
// The path is one-way:
//
//	Load (ONNX import, shape inference, constant folding, verification)
//	  → Compile (kernels, memory plan, weight region)
//	  → Executable.NewSession (one arena per session)
//	  → Session.Run, again and again.
//
// Sessions of one Executable share its read-only weights and may run
// concurrently; a single Session runs one call at a time. The outputs that
// Run returns view the session's arena and stay valid until its next Run.
//
// A model that leaves dimensions open, or whose shapes follow from
// values, is open (Model.Open): its sessions plan each set of input shapes
// the first time they see it and keep Options.Plans such plans; a run of
// shapes already planned allocates nothing. Options.Dims fixes open
// dimensions ahead of time and Options.MaxDims plans once at a bound.
package berth
