//go:build !purego

package main

// purego reports a build with -tags purego (pure-Go kernels only).
const purego = false
