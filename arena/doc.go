// Package arena implements berth's arena contract: one pre-planned buffer
// per session in which every tensor of the plan has a fixed slot.
//
// A Layout says where each tensor lives (offset and true byte size); an
// Arena is a Layout bound to memory. Typed reads and writes convert between
// float32 and the tensor's own type (f16 and bf16 round to nearest even) and
// are clamped to the tensor's own slot, never to the arena's end. Host is
// an arena in host memory; Remote one in memory the host reaches only by
// copies (a GPU's), through the Memory a device gives it.
package arena
