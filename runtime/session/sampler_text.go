package session

import "fmt"

// SamplingRecord is a sampler's settings as irtool run --json prints
// them ("sampling"): the settings used and, when tokens are drawn (temp >
// 0), the seed.
type SamplingRecord struct {
	Temp          float32 `json:"temp"`
	TopK          int     `json:"top_k"`
	TopP          float32 `json:"top_p"`
	MinP          float32 `json:"min_p"`
	MinKeep       int     `json:"min_keep"`
	RepeatPenalty float32 `json:"repeat_penalty"`
	RepeatLastN   int     `json:"repeat_last_n"`
	Seed          *uint64 `json:"seed,omitempty"`
	// SeedRandom says the seed was picked at random (the caller's to
	// set).
	SeedRandom bool `json:"seed_random,omitempty"`
}

// Record returns the options' record.
func (o SamplerOptions) Record() *SamplingRecord {
	r := &SamplingRecord{Temp: o.Temp, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP, MinKeep: o.MinKeep,
		RepeatPenalty: o.RepeatPenalty, RepeatLastN: o.RepeatLastN}
	if !o.Greedy() {
		seed := o.Seed
		r.Seed = &seed
	}
	return r
}

// Describe is one line naming the sampler chain ("" for greedy decoding
// without a penalty): "greedy" and the penalty, or the temperature, top-k,
// top-p, min-p, the penalty and the seed.
func (o SamplerOptions) Describe() string {
	pen := ""
	if o.RepeatPenalty != 1 && o.RepeatLastN != 0 {
		pen = fmt.Sprintf("repeat-penalty %g over the last %d tokens", o.RepeatPenalty, o.RepeatLastN)
		if o.RepeatLastN < 0 {
			pen = fmt.Sprintf("repeat-penalty %g over every token", o.RepeatPenalty)
		}
	}
	if o.Greedy() {
		if pen == "" {
			return ""
		}
		return "greedy, " + pen
	}
	s := fmt.Sprintf("temp %g, top-k %d, top-p %g, min-p %g", o.Temp, o.TopK, o.TopP, o.MinP)
	if pen != "" {
		s += ", " + pen
	}
	return s + fmt.Sprintf(", seed %d", o.Seed)
}
