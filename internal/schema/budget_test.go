package schema

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkValidateWorst: one op is one validation of a worst case (worstCases: a schema within every
// bound of Compile, data within the default payload bound, chosen to make the validator work hardest
// in one way), decoding included: ms/op is the wall time it takes, cpu-ms/op the CPU time the
// process spent on it (all threads, the garbage collector's included: less sensitive than wall time
// to the other work of a shared machine), steps/op what the meter charged (MaxSteps at most),
// cpu-ns/step the CPU time of a step. Issue 43 asks ≤ 50 ms per event of
// any stored schema on this project's test machine.
func BenchmarkValidateWorst(b *testing.B) {
	for _, c := range worstCases {
		b.Run(c.name, func(b *testing.B) {
			s, err := Compile("t", []byte(c.schema))
			require.NoError(b, err)
			data := []byte(c.data())
			require.LessOrEqual(b, len(data), worstDataBytes)
			var steps int64
			cpu := cpuTime()
			b.ResetTimer()
			for range b.N {
				steps, _ = s.validate(context.Background(), data)
			}
			b.StopTimer()
			cpuNs := float64(cpuTime()-cpu) / float64(b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/op")
			b.ReportMetric(cpuNs/1e6, "cpu-ms/op")
			b.ReportMetric(float64(steps), "steps/op")
			b.ReportMetric(cpuNs/float64(max(steps, 1)), "cpu-ns/step")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestWorstCasesStayWithinTheBudget: every worst case compiles, and its validation ends with a
// verdict (a place, or ErrFailsUnplaced) or ErrOverBudget, having spent at most MaxSteps, decoding
// and both its validations together; the recursion that doubles at each level of the data (2^60 applications
// unmetered) is stopped by the budget. Broken by a hook that charges nothing (the doubling recursion
// never returns: the test times out).
func TestWorstCasesStayWithinTheBudget(t *testing.T) {
	t.Parallel()
	for _, c := range worstCases {
		s, err := Compile("t", []byte(c.schema))
		require.NoError(t, err, c.name)
		steps, err := s.validate(context.Background(), []byte(c.data()))
		if err != nil {
			var failed *Error
			assert.True(t, errors.Is(err, ErrOverBudget) || errors.Is(err, ErrFailsUnplaced) || errors.As(err, &failed), "%s: %v", c.name, err)
		}
		assert.LessOrEqual(t, steps, int64(MaxSteps), c.name)
		if c.name == doublingRecursion {
			assert.ErrorIs(t, err, ErrOverBudget, c.name)
			assert.Contains(t, err.Error(), "simplify the schema")
		}
	}
}

// TestValidateHonoursItsContext: a validation whose context has ended stops within ctxCheckSteps of
// its start with the context's error, not a verdict; a shared compiled copy is not held by it.
// Broken by a meter that does not look at its context (it runs to its budget: ErrOverBudget).
func TestValidateHonoursItsContext(t *testing.T) {
	t.Parallel()
	s, err := Compile("t", []byte(worstCaseNamed(t, doublingRecursion).schema))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	steps, err := s.validate(ctx, []byte(nestedArrays(60)))
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrOverBudget)
	assert.Less(t, steps, int64(2*ctxCheckSteps), "stopped at the first look at its context")
	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	_, err = s.validate(ctx, []byte(nestedArrays(60)))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var failed *Error
	assert.True(t, errors.As(s.Validate(context.Background(), []byte(`"x"`)), &failed), "the copy is free again: a verdict")
}
