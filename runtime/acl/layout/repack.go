package layout

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// QuantBytes is the size of the quant part of a repacked matrix of n
// values: one byte per value for q8_0, half a byte for q4_0.
func QuantBytes(t ir.DType, n int64) int64 {
	if t == ir.Q4_0 {
		return n / 2
	}
	return n
}

// RepackQ8_0 turns an N×K q8_0 matrix of ggml blocks (per block: an f16
// scale, then 32 int8 quants) into CANN's split layout: the N·K int8 quants
// row after row, then the N·K/32 f16 scales in the same order.
func RepackQ8_0(blocks []byte, K, N int64) ([]byte, error) {
	if K%32 != 0 || int64(len(blocks)) != N*K/32*34 {
		return nil, fmt.Errorf("q8_0: %d bytes for a %d×%d matrix", len(blocks), N, K)
	}
	nb := N * K / 32
	out := make([]byte, N*K+2*nb)
	q, s := out[:N*K], out[N*K:]
	for i := int64(0); i < nb; i++ {
		blk := blocks[34*i : 34*i+34]
		s[2*i], s[2*i+1] = blk[0], blk[1]
		copy(q[32*i:32*i+32], blk[2:34])
	}
	return out, nil
}

// RepackQ4_0 turns an N×K q4_0 matrix of ggml blocks (per block: an f16
// scale, then 16 bytes holding value j in the low nibble of byte j and
// value j+16 in its high nibble, each stored as q+8) into CANN's split
// layout: signed int4 values in order, two per byte (even index in the low
// nibble), then the f16 scales. Flipping bit 3 of a nibble (xor 8) turns
// the biased value into two's complement, as ggml-cann does with 0x88.
func RepackQ4_0(blocks []byte, K, N int64) ([]byte, error) {
	if K%32 != 0 || int64(len(blocks)) != N*K/32*18 {
		return nil, fmt.Errorf("q4_0: %d bytes for a %d×%d matrix", len(blocks), N, K)
	}
	nb := N * K / 32
	out := make([]byte, N*K/2+2*nb)
	q, s := out[:N*K/2], out[N*K/2:]
	var v [32]byte
	for i := int64(0); i < nb; i++ {
		blk := blocks[18*i : 18*i+18]
		s[2*i], s[2*i+1] = blk[0], blk[1]
		for j := 0; j < 16; j++ {
			v[j] = blk[2+j] & 0x0f
			v[j+16] = blk[2+j] >> 4
		}
		for j := 0; j < 16; j++ {
			q[16*i+int64(j)] = (v[2*j] | v[2*j+1]<<4) ^ 0x88
		}
	}
	return out, nil
}
