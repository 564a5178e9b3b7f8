//go:build race

package main

// The race detector randomises the scheduler, which undoes the ordering that
// GOMAXPROCS(1) gives pion's two pipeline goroutines (README "Determinism").
func init() { raceBuild = true }
