package breaker

import (
	"fmt"
)

// CountCall is one run of rdb.Count: its keys and arguments, as CountArgs makes them.
type CountCall struct {
	Keys []string
	Args []any
}

// MergeCounts merges count calls sent together (the outcomes of concurrent settles) into one, so that
// they read and write each webhook's circuit and hourly counters once, to the same effect as the calls
// run one after the other in their order: the merged call runs at the latest of their nows. ok is
// false when there is nothing to merge: fewer than two calls, or one not as CountArgs makes it with
// the first's circuits key and settings. split, given the merged call's reply, returns each call's
// part of it, in the calls' order.
func MergeCounts(calls []CountCall) (merged CountCall, split func(reply []any) ([][]any, error), ok bool) {
	if len(calls) < 2 {
		return CountCall{}, nil, false
	}
	for _, c := range calls {
		if !countMergeable(c, calls[0]) {
			return CountCall{}, nil, false
		}
	}
	size := 4 // the merged call's args: the settings, then every call's outcomes
	for _, c := range calls {
		size += len(c.Args) - 4
	}
	keys := append(make([]string, 0, len(calls[0].Keys)), calls[0].Keys[:2]...)
	args := append(make([]any, 0, size), calls[0].Args[:4]...)
	index := map[string]int{}
	sizes := make([]int, len(calls))
	for i, c := range calls {
		args[0] = max(args[0].(int64), c.Args[0].(int64))
		for a := 4; a+countStride-1 < len(c.Args); a += countStride {
			hourly := c.Keys[c.Args[a+countStride-1].(int)]
			k, ok := index[hourly]
			if !ok {
				keys = append(keys, hourly)
				k = len(keys) - 1
				index[hourly] = k
			}
			args = append(args, c.Args[a:a+countStride-1]...)
			args = append(args, k)
			sizes[i]++
		}
	}
	outcomes := len(args[4:]) / countStride
	return CountCall{Keys: keys, Args: args}, func(reply []any) ([][]any, error) {
		if len(reply) != 2*outcomes {
			return nil, fmt.Errorf("merged count: reply of %d items", len(reply))
		}
		parts := make([][]any, len(calls))
		for i, n := range sizes {
			parts[i], reply = reply[:2*n], reply[2*n:]
		}
		return parts, nil
	}, true
}

// countMergeable reports whether a rdb.Count call is as CountArgs makes it, with first's key and
// settings: only such calls are merged.
func countMergeable(c, first CountCall) bool {
	if len(c.Keys) < 2 || c.Keys[0] != first.Keys[0] || c.Keys[1] != first.Keys[1] || len(c.Args) < 4 || (len(c.Args)-4)%countStride != 0 {
		return false
	}
	if _, ok := c.Args[0].(int64); !ok {
		return false
	}
	for i := 1; i < 4; i++ {
		if c.Args[i] != first.Args[i] {
			return false
		}
	}
	for a := 4 + countStride - 1; a < len(c.Args); a += countStride {
		if k, ok := c.Args[a].(int); !ok || k < 2 || k >= len(c.Keys) {
			return false
		}
	}
	return true
}
