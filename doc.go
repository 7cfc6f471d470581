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
package berth
