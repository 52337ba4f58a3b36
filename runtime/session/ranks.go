package session

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Ranks steps the sessions of the ranks of a tensor-parallel model
// together: every step runs each rank's Step on its own goroutine (the
// ranks meet at their collectives) and waits for all of them. The step's
// logits are rank 0's, after checking that every rank computed the same
// bits (the logits are all-gathered, so they must be). A rank that fails
// calls fail, which must make the others' pending collectives fail
// (device.Group.Fail), so that the step returns an error naming the rank
// instead of hanging. No goroutine outlives a step.
type Ranks struct {
	ranks []Stepper
	fail  func(rank int, err error)
}

// NewRanks returns a Stepper over the ranks' steppers.
func NewRanks(ranks []Stepper, fail func(rank int, err error)) (*Ranks, error) {
	if len(ranks) == 0 {
		return nil, errors.New("session: no ranks")
	}
	if fail == nil {
		fail = func(int, error) {}
	}
	return &Ranks{ranks: ranks, fail: fail}, nil
}

// Step runs one step on every rank.
func (r *Ranks) Step(tokens []int32) (*StepResult, error) {
	res := make([]*StepResult, len(r.ranks))
	errs := make([]error, len(r.ranks))
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range r.ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = s.Step(tokens)
			if errs[i] != nil {
				r.fail(i, errs[i])
			}
		}()
	}
	wg.Wait()
	var all []error
	for i, err := range errs {
		if err != nil {
			all = append(all, fmt.Errorf("rank %d: %w", i, err))
		}
	}
	if len(all) > 0 {
		return nil, errors.Join(all...)
	}
	for i := 1; i < len(res); i++ {
		if err := sameLogits(res[0].Logits, res[i].Logits); err != nil {
			return nil, fmt.Errorf("session: rank %d: %w", i, err)
		}
	}
	out := *res[0]
	out.Time = time.Since(start)
	return &out, nil
}

func sameLogits(a, b [][]float32) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d rows of logits, rank 0 has %d", len(b), len(a))
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return fmt.Errorf("row %d has %d logits, rank 0's %d", i, len(b[i]), len(a[i]))
		}
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return fmt.Errorf("logit [%d][%d] is %v, rank 0's %v", i, j, b[i][j], a[i][j])
			}
		}
	}
	return nil
}
