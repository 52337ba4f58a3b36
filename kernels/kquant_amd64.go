//go:build amd64 && !purego

package kernels

// The K-quant kernels of kquant_amd64.s (twins in kquant.go).

//go:noescape
func dotQ4Kx8iAVX2(p *byte, qs *int8, d *float32, b32 *int16, nsb int, ng int, pairs bool, out *float32)

//go:noescape
func dotQ5KRowsAVX2(src *byte, stride int, qs *int8, d *float32, b32 *int16, nsb int, nr int, out *float32)

//go:noescape
func dotQ6KRowsAVX2(src *byte, stride int, qs *int8, d *float32, bs16 *int16, nsb int, nr int, out *float32)

//go:noescape
func dotQ4Kx8x4iAVX2(p *byte, a *q4kx4Args, nsb int, out *[4][8]float32)

//go:noescape
func dotQ6Kx4RowsAVX2(src *byte, stride int, a *q6kx4Args, nsb int, nr int)
