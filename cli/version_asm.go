//go:build !purego

package cli

// purego reports a build with -tags purego (pure-Go kernels only).
const purego = false
