package passes

// Test-only bridges, so the external tests run graphs on the same
// deterministic data translation validation uses.

// LeafData is leafData: deterministic contents for a leaf.
var LeafData = leafData

// WeightData is weightData: an eval.WeightSource over a map.
type WeightData = weightData
