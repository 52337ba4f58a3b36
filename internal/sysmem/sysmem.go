// Package sysmem bounds what one allocation request may ask of the
// machine: a graph whose tensors (from a hostile IR file, a corrupt model
// or a huge --ctx) need more bytes than the machine has must be refused with
// an error that names the culprit, before the Go runtime is asked for the
// memory (a failed large allocation is a fatal error there, not a panic).
package sysmem

import "fmt"

// fallback is the bound where the machine's memory is unknown.
const fallback = int64(1) << 40

// Total is the machine's physical memory in bytes (1 TiB where it cannot
// be read).
func Total() int64 {
	if n := total(); n > 0 {
		return n
	}
	return fallback
}

// Check returns an error when need bytes are more than the machine's
// physical memory; what names the request in the message.
func Check(what string, need int64) error {
	if need < 0 {
		return fmt.Errorf("%s: negative size %d", what, need)
	}
	if t := Total(); need > t {
		return fmt.Errorf("%s needs %d bytes (%.1f GiB), more than this machine's %.1f GiB of memory", what, need, gib(need), gib(t))
	}
	return nil
}

func gib(n int64) float64 { return float64(n) / (1 << 30) }
