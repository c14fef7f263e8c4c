package testkit

import "runtime"

// HeapGrowth runs fn between two garbage collections and returns by how
// much it grew the live heap, in bytes (negative if fn freed memory). What
// fn allocates stays counted only while something keeps it reachable.
func HeapGrowth(fn func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}
