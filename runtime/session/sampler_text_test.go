package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// Describe and Record: greedy without a penalty says nothing and records
// no seed; a penalty and a draw are named, the draw with its seed.
func TestSamplerDescribeRecord(t *testing.T) {
	greedy := SamplerOptions{RepeatPenalty: 1, RepeatLastN: 64, TopK: 40, TopP: 0.95, MinP: 0.05}
	pen := greedy
	pen.RepeatPenalty = 1.1
	all := pen
	all.RepeatLastN = -1
	drawn := pen
	drawn.Temp, drawn.Seed = 0.8, 7
	for _, c := range []struct {
		o          SamplerOptions
		text, json string
	}{
		{greedy, "", `{"temp":0,"top_k":40,"top_p":0.95,"min_p":0.05,"min_keep":0,"repeat_penalty":1,"repeat_last_n":64}`},
		{pen, "greedy, repeat-penalty 1.1 over the last 64 tokens", ""},
		{all, "greedy, repeat-penalty 1.1 over every token", ""},
		{drawn, "temp 0.8, top-k 40, top-p 0.95, min-p 0.05, repeat-penalty 1.1 over the last 64 tokens, seed 7",
			`{"temp":0.8,"top_k":40,"top_p":0.95,"min_p":0.05,"min_keep":0,"repeat_penalty":1.1,"repeat_last_n":64,"seed":7}`},
	} {
		if got := c.o.Describe(); got != c.text {
			t.Errorf("Describe(%+v) = %q, want %q", c.o, got, c.text)
		}
		if c.json == "" {
			continue
		}
		b, err := json.Marshal(c.o.Record())
		if err != nil || string(b) != c.json {
			t.Errorf("Record(%+v) = %s, %v; want %s", c.o, b, err, c.json)
		}
	}
}

// steps records the steps it is given and fails at step fail (-1: never).
type steps struct {
	got  []string
	fail int
}

func (s *steps) Step(tokens []int32) (*StepResult, error) {
	if len(s.got) == s.fail {
		return nil, errors.New("bad step")
	}
	s.got = append(s.got, fmt.Sprint(tokens))
	return &StepResult{}, nil
}

// Replay: the prompt in ubatch-token steps, then one token per step, up
// to the first failing step.
func TestReplay(t *testing.T) {
	s := &steps{fail: -1}
	if err := Replay(s, []int32{1, 2, 3, 4, 5, 6, 7}, 5, 2); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(s.got), "[[1 2] [3 4] [5] [6] [7]]"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	s = &steps{fail: 1}
	if err := Replay(s, []int32{1, 2, 3}, 3, 2); err == nil || len(s.got) != 1 {
		t.Errorf("Replay: %v after %v, want the second step's error", err, s.got)
	}
}
