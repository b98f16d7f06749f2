// Package netns runs code inside a Linux network namespace and provides
// throwaway namespaces for tests.
//
// A network namespace belongs to an OS thread, not to a goroutine. Do locks
// the calling goroutine to its thread, switches the thread into the target
// namespace, runs the function and switches back. If switching back fails the
// thread is left locked, so the Go runtime destroys it when the goroutine
// exits instead of reusing a thread that sits in the wrong namespace.
// Goroutines started inside the function do NOT inherit the namespace.
//
// Linux only by design; other platforms get ErrUnsupported.
package netns
