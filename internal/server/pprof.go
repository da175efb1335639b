package server

import (
	"net/http"
	"net/http/pprof"
	"runtime"
)

// Sampling of the mutex and block profiles while the pprof listener is on
// (they are empty otherwise): one contention event in mutexFraction, and
// on average one blocking event per blockRate nanoseconds spent blocked,
// which costs little and finds what makes a few requests wait (the tail).
const (
	mutexFraction = 100
	blockRate     = 100_000 // 100 µs
)

// enableContentionProfiles turns on the mutex and block profiles.
func enableContentionProfiles() {
	runtime.SetMutexProfileFraction(mutexFraction)
	runtime.SetBlockProfileRate(blockRate)
}

// pprofHandler serves the net/http/pprof endpoints on a mux of its own (the
// package's side effect of registering on http.DefaultServeMux is never
// served, because nothing here serves that mux), and slow's captures under
// /debug/pprof/slow.
func pprofHandler(slow *slowTrace) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index) // also the named profiles: heap, goroutine, allocs, block, mutex, threadcreate
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.Handle("GET /debug/pprof/slow", slow)
	return mux
}
