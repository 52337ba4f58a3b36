//go:build !purego

package kernels

// Purego reports a build with -tags purego (pure-Go kernels only).
const Purego = false
