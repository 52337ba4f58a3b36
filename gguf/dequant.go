package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// dequantizers maps each type Dequantize handles to a function that expands
// nb consecutive blocks of src into dst (len(dst) == nb*BlockSize).
//
// Each follows ggml-quants.c's dequantize_row_* operation by operation, in
// float32 with every product rounded before the following add (explicit
// float32 conversions stop the Go compiler from fusing them into FMAs, as
// ggml's reference build does not fuse either), so results are bit-identical
// to ggml's to_float.
var dequantizers = map[GGMLType]func(src []byte, dst []float32, nb int){
	TypeF32:  dequantF32,
	TypeF16:  dequantF16,
	TypeBF16: dequantBF16,
	TypeQ4_0: dequantQ4_0,
	TypeQ4_1: dequantQ4_1,
	TypeQ5_0: dequantQ5_0,
	TypeQ5_1: dequantQ5_1,
	TypeQ8_0: dequantQ8_0,
	TypeQ2_K: dequantQ2K,
	TypeQ3_K: dequantQ3K,
	TypeQ4_K: dequantQ4K,
	TypeQ5_K: dequantQ5K,
	TypeQ6_K: dequantQ6K,

	TypeIQ4_NL: dequantIQ4NL,
	TypeIQ4_XS: dequantIQ4XS,
}

// CanDequantize reports whether Dequantize handles t.
func CanDequantize(t GGMLType) bool {
	_, ok := dequantizers[t]
	return ok
}

// Dequantize expands len(dst) elements of type t from src into dst. len(dst)
// must be a multiple of t's block size and src must hold at least
// RowBytes(t, len(dst)) bytes. Types other than F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL and IQ4_XS give an error wrapping
// ErrUnsupported.
func Dequantize(t GGMLType, src []byte, dst []float32) (err error) {
	fn, ok := dequantizers[t]
	if !ok {
		return fmt.Errorf("dequantize %s: %w", t, ErrUnsupported)
	}
	bs, ts := t.BlockSize(), t.TypeSize()
	if len(dst)%bs != 0 {
		return fmt.Errorf("dequantize %s: %d elements is not a multiple of the block size %d", t, len(dst), bs)
	}
	nb := len(dst) / bs
	if need := nb * ts; len(src) < need {
		return fmt.Errorf("dequantize %s: %d elements need %d bytes, have %d: %w", t, len(dst), need, len(src), errShortDequant)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("dequantize %s: %w: %v", t, ErrInternal, r)
		}
	}()
	fn(src[:nb*ts], dst, nb)
	return nil
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

func half(b []byte) float32 { return F16ToF32(binary.LittleEndian.Uint16(b)) }

func dequantF32(src []byte, dst []float32, nb int) {
	for i := range dst[:nb] {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func dequantF16(src []byte, dst []float32, nb int) {
	tab := f16Table()
	src = src[:2*nb]
	dst = dst[:nb]
	for i := range dst {
		dst[i] = tab[uint16(src[2*i])|uint16(src[2*i+1])<<8]
	}
}

func dequantBF16(src []byte, dst []float32, nb int) {
	for i := range dst[:nb] {
		dst[i] = BF16ToF32(le16(src[2*i:]))
	}
}

// Q4_0 block (18 bytes): d f16, qs[16]; x = (nibble-8)*d, low nibbles first.
func dequantQ4_0(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*18 : i*18+18]
		d := half(b)
		qs := b[2:18]
		y := dst[i*32 : i*32+32]
		for j := range 16 {
			y[j] = float32(int(qs[j]&0x0f)-8) * d
			y[j+16] = float32(int(qs[j]>>4)-8) * d
		}
	}
}

// Q4_1 block (20 bytes): d f16, m f16, qs[16]; x = nibble*d + m.
func dequantQ4_1(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*20 : i*20+20]
		d, m := half(b), half(b[2:])
		qs := b[4:20]
		y := dst[i*32 : i*32+32]
		for j := range 16 {
			y[j] = float32(float32(qs[j]&0x0f)*d) + m
			y[j+16] = float32(float32(qs[j]>>4)*d) + m
		}
	}
}

// Q5_0 block (22 bytes): d f16, qh u32 (fifth bits), qs[16]; x = (q-16)*d.
func dequantQ5_0(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*22 : i*22+22]
		d := half(b)
		qh := binary.LittleEndian.Uint32(b[2:])
		qs := b[6:22]
		y := dst[i*32 : i*32+32]
		for j := range 16 {
			xh0 := uint8((qh>>j)<<4) & 0x10
			xh1 := uint8(qh>>(j+12)) & 0x10
			y[j] = float32(int(qs[j]&0x0f|xh0)-16) * d
			y[j+16] = float32(int(qs[j]>>4|xh1)-16) * d
		}
	}
}

// Q5_1 block (24 bytes): d f16, m f16, qh u32, qs[16]; x = q*d + m.
func dequantQ5_1(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*24 : i*24+24]
		d, m := half(b), half(b[2:])
		qh := binary.LittleEndian.Uint32(b[4:])
		qs := b[8:24]
		y := dst[i*32 : i*32+32]
		for j := range 16 {
			xh0 := uint8((qh>>j)<<4) & 0x10
			xh1 := uint8(qh>>(j+12)) & 0x10
			y[j] = float32(float32(qs[j]&0x0f|xh0)*d) + m
			y[j+16] = float32(float32(qs[j]>>4|xh1)*d) + m
		}
	}
}

// Q8_0 block (34 bytes): d f16, qs[32] int8; x = q*d.
func dequantQ8_0(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*34 : i*34+34]
		d := half(b)
		qs := b[2:34]
		y := dst[i*32 : i*32+32]
		for j := range 32 {
			y[j] = float32(int8(qs[j])) * d
		}
	}
}

// Q2_K block (84 bytes): scales[16] (low nibble scale, high nibble min),
// qs[64] (2-bit quants), d f16, dmin f16; x = d*sc*q - dmin*m.
func dequantQ2K(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*84 : i*84+84]
		scales := b[0:16]
		q := b[16:80]
		d, dmin := half(b[80:]), half(b[82:])
		y := dst[i*256 : i*256+256]
		is, k := 0, 0
		for n := 0; n < 256; n += 128 {
			shift := uint(0)
			for range 4 {
				for h := 0; h < 32; h += 16 {
					sc := scales[is]
					is++
					dl := d * float32(sc&0x0f)
					ml := dmin * float32(sc>>4)
					for l := range 16 {
						y[k] = float32(dl*float32((q[h+l]>>shift)&3)) - ml
						k++
					}
				}
				shift += 2
			}
			q = q[32:]
		}
	}
}

// Q3_K block (110 bytes): hmask[32] (third bits), qs[64] (low 2 bits),
// scales[12] (16 six-bit scales), d f16; x = d*(sc-32)*(q - 4 if the hmask
// bit is clear).
func dequantQ3K(src []byte, dst []float32, nb int) {
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	var aux [4]uint32
	var scales [16]int8
	for i := range nb {
		b := src[i*110 : i*110+110]
		hm := b[0:32]
		q := b[32:96]
		sb := b[96:108]
		dAll := half(b[108:])
		aux[0] = binary.LittleEndian.Uint32(sb[0:])
		aux[1] = binary.LittleEndian.Uint32(sb[4:])
		tmp := binary.LittleEndian.Uint32(sb[8:])
		aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4)
		aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4)
		aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4)
		aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4)
		for w := range 4 {
			for c := range 4 {
				scales[4*w+c] = int8(aux[w] >> (8 * c))
			}
		}
		y := dst[i*256 : i*256+256]
		is, k := 0, 0
		m := uint8(1)
		for n := 0; n < 256; n += 128 {
			shift := uint(0)
			for range 4 {
				for h := 0; h < 32; h += 16 {
					dl := dAll * float32(int(scales[is])-32)
					is++
					for l := range 16 {
						qv := int((q[h+l] >> shift) & 3)
						if hm[h+l]&m == 0 {
							qv -= 4
						}
						y[k] = dl * float32(qv)
						k++
					}
				}
				shift += 2
				m <<= 1
			}
			q = q[32:]
		}
	}
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block
// (get_scale_min_k4).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0x0f) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}

// Q4_K block (144 bytes): d f16, dmin f16, scales[12], qs[128]; eight
// sub-blocks of 32, x = d*sc*q - dmin*m.
func dequantQ4K(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*144 : i*144+144]
		d, dmin := half(b), half(b[2:])
		scales := b[4:16]
		q := b[16:144]
		y := dst[i*256 : i*256+256]
		is, k := 0, 0
		for j := 0; j < 256; j += 64 {
			sc, m := scaleMinK4(is, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = scaleMinK4(is+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			for l := range 32 {
				y[k+l] = float32(d1*float32(q[l]&0x0f)) - m1
				y[k+32+l] = float32(d2*float32(q[l]>>4)) - m2
			}
			k += 64
			q = q[32:]
			is += 2
		}
	}
}

// Q5_K block (176 bytes): d f16, dmin f16, scales[12], qh[32] (fifth bits),
// qs[128]; x = d*sc*q - dmin*m.
func dequantQ5K(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*176 : i*176+176]
		d, dmin := half(b), half(b[2:])
		scales := b[4:16]
		qh := b[16:48]
		ql := b[48:176]
		y := dst[i*256 : i*256+256]
		is, k := 0, 0
		u1, u2 := uint8(1), uint8(2)
		for j := 0; j < 256; j += 64 {
			sc, m := scaleMinK4(is, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = scaleMinK4(is+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			for l := range 32 {
				lo := int(ql[l] & 0x0f)
				if qh[l]&u1 != 0 {
					lo += 16
				}
				hi := int(ql[l] >> 4)
				if qh[l]&u2 != 0 {
					hi += 16
				}
				y[k+l] = float32(d1*float32(lo)) - m1
				y[k+32+l] = float32(d2*float32(hi)) - m2
			}
			k += 64
			ql = ql[32:]
			is += 2
			u1 <<= 2
			u2 <<= 2
		}
	}
}

// Q6_K block (210 bytes): ql[128] (low 4 bits), qh[64] (high 2 bits),
// scales[16] int8, d f16; x = d*sc*(q-32).
func dequantQ6K(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*210 : i*210+210]
		ql := b[0:128]
		qh := b[128:192]
		sc := b[192:208]
		d := half(b[208:])
		y := dst[i*256 : i*256+256]
		for n := 0; n < 256; n += 128 {
			yy := y[n : n+128]
			for l := range 32 {
				is := l / 16
				q1 := int((ql[l]&0x0f)|((qh[l]>>0)&3)<<4) - 32
				q2 := int((ql[l+32]&0x0f)|((qh[l]>>2)&3)<<4) - 32
				q3 := int((ql[l]>>4)|((qh[l]>>4)&3)<<4) - 32
				q4 := int((ql[l+32]>>4)|((qh[l]>>6)&3)<<4) - 32
				yy[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				yy[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				yy[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				yy[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
			ql = ql[64:]
			qh = qh[32:]
			sc = sc[8:]
		}
	}
}

// KValuesIQ4NL is the non-linear 4-bit codebook of IQ4_NL and IQ4_XS
// (kvalues_iq4nl in ggml-common.h): a 4-bit index selects one of these
// int8 values.
var KValuesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// IQ4_NL block (18 bytes): d f16, qs[16]; x = d*kvalues[nibble], low
// nibbles are values 0..15, high nibbles 16..31.
func dequantIQ4NL(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*18 : i*18+18]
		d := half(b)
		qs := b[2:18]
		y := dst[i*32 : i*32+32]
		for j := range 16 {
			y[j] = d * float32(KValuesIQ4NL[qs[j]&0x0f])
			y[j+16] = d * float32(KValuesIQ4NL[qs[j]>>4])
		}
	}
}

// IQ4_XS block (136 bytes, 256 values): d f16, scales_h u16, scales_l[4],
// qs[128]. Sub-block ib (32 values) has the 6-bit scale
// ls = (scales_l[ib/2] >> 4·(ib%2)) & 0xf | ((scales_h >> 2·ib) & 3) << 4,
// dl = d·(ls-32), and x = dl*kvalues[nibble], its 16 bytes of nibbles laid
// out as IQ4_NL's.
func dequantIQ4XS(src []byte, dst []float32, nb int) {
	for i := range nb {
		b := src[i*136 : i*136+136]
		d := half(b)
		sh := le16(b[2:])
		for ib := range 8 {
			ls := int(b[4+ib/2]>>(4*(ib%2)))&0xf | int(sh>>(2*ib))&3<<4
			dl := d * float32(ls-32)
			qs := b[8+16*ib : 8+16*ib+16]
			y := dst[i*256+32*ib : i*256+32*ib+32]
			for j := range 16 {
				y[j] = dl * float32(KValuesIQ4NL[qs[j]&0x0f])
				y[j+16] = dl * float32(KValuesIQ4NL[qs[j]>>4])
			}
		}
	}
}
