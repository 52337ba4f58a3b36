//go:build amd64 && !purego

package kernels

//go:noescape
func dotQ5_0RowsAVX2(src *byte, stride int, qs *int8, d *float32, nb int, nr int, out *float32)

//go:noescape
func dotQ4_1RowsAVX2(src *byte, stride int, qs *int8, d *float32, s *float32, nb int, nr int, out *float32)

//go:noescape
func dotQ5_1RowsAVX2(src *byte, stride int, qs *int8, d *float32, s *float32, nb int, nr int, out *float32)

//go:noescape
func dotQ5_0Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32)

//go:noescape
func dotQ4_1Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32)

//go:noescape
func dotQ5_1Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32)

//go:noescape
func dotIQ4NLx8AVX2(src *byte, stride int, qs *int8, d *float32, nb int, out *float32)

//go:noescape
func dotQ2KRowsAVX2(src *byte, stride int, qs *int8, d *float32, bsums *int32, nb int, nr int, out *float32)

//go:noescape
func dotQ3KRowsAVX2(src *byte, stride int, qs *int8, d *float32, bsums *int32, nb int, nr int, out *float32)

//go:noescape
func dotIQ4XSRowsAVX2(src *byte, stride int, qs *int8, d *float32, nb int, nr int, out *float32)
