package cann

import "github.com/irtool/irtool/ir"

// aclDType maps IR dtypes to the aclDataType ggml-cann passes (CANN docs,
// aclCreateTensor). Quantised weights are repacked at load time into quants followed by
// f16 scales (ggml-cann's set_tensor), so their descriptor is the quant part: int8 for
// q8_0, int4 for q4_0. Types with no entry are never handed to an aclnn call.
var aclDType = map[ir.DType]string{
	ir.F32: "ACL_FLOAT", ir.F16: "ACL_FLOAT16", ir.BF16: "ACL_BF16",
	ir.I8: "ACL_INT8", ir.I16: "ACL_INT16", ir.I32: "ACL_INT32", ir.I64: "ACL_INT64",
	ir.Q8_0: "ACL_INT8", ir.Q4_0: "ACL_INT4",
}

// newDesc builds a descriptor the way ggml-cann maps a ggml tensor to
// aclCreateTensor (CANN docs, aclCreateTensor and the two-phase aclnn calls): dims and strides reversed (ggml dim 0 is
// the last ACL dim), strides divided by the element size, storage a 1-D
// extent of 1 + Σ (ne_i-1)·stride_i elements, format ND. The address is
// that of element 0, so the storage offset is 0. For a quantised type the
// element view is that of its repacked quants: dense strides over Ne.
func newDesc(dt ir.DType, ne, nb [4]int64, addr Addr) TensorDesc {
	t := TensorDesc{DType: dt, ACLDType: aclDType[dt], Ne: ne, Nb: nb, Format: "ND", Addr: addr,
		Shape: make([]int64, 4), Strides: make([]int64, 4)}
	var st [4]int64
	if dt.Quantized() {
		st = [4]int64{1, ne[0], ne[0] * ne[1], ne[0] * ne[1] * ne[2]}
	} else {
		elt := dt.TypeSize()
		for i := range nb {
			st[i] = nb[i] / elt
		}
	}
	extent := int64(1)
	for i := range ne {
		t.Shape[3-i] = ne[i]
		t.Strides[3-i] = st[i]
		if ne[i] > 0 {
			extent += (ne[i] - 1) * st[i]
		} else {
			extent = 0
		}
	}
	t.StorageShape = []int64{extent}
	return t
}
