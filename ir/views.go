package ir

// IsView reports whether n's output holds its first input's bytes
// unchanged, read with another shape: Reshape, Flatten, Squeeze,
// Unsqueeze and Identity of the default domain. Such an output can share
// its input's memory (a view) or, for a constant input, its data.
func IsView(n *Node) bool {
	switch n.Op {
	case "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity":
		return (n.Domain == "" || n.Domain == "ai.onnx") && len(n.Outputs) == 1
	}
	return false
}
