package kafkadest

// Produces whose Send ended before the brokers acknowledged them. The idempotent producer makes the
// client's own retries of a produce write it once, but a new produce of the same message is a new
// record: so the next attempt of such a message waits for the earlier produce instead of writing the
// message again, and succeeds with it when it was written.

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produce is one record's produce and, once the brokers answered, its outcome.
type produce struct {
	done chan struct{} // closed with the outcome set

	mu        sync.Mutex
	finished  bool
	err       error
	partition int32
	offset    int64
	onDone    func() // set by orphan: run once the outcome is in
}

func newProduce() *produce { return &produce{done: make(chan struct{})} }

// promise is the record's kgo promise: it keeps the outcome (not the record) and runs onDone.
func (p *produce) promise(r *kgo.Record, err error) {
	p.mu.Lock()
	p.finished, p.err, p.partition, p.offset = true, err, r.Partition, r.Offset
	f := p.onDone
	p.onDone = nil
	p.mu.Unlock()
	close(p.done)
	if f != nil {
		f()
	}
}

// orphan runs f once the outcome is in and reports true, or reports false when it is in already
// (then f is not run).
func (p *produce) orphan(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return false
	}
	p.onDone = f
	return true
}

// outcome is the produce's error, and its receipt when it succeeded; only after done is closed.
func (p *produce) outcome() (receipt string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return "", p.err
	}
	return fmt.Sprintf("partition %d, offset %d", p.partition, p.offset), nil
}

// unacked remembers produces whose Send ended first, by client, topic and message id, at most max of
// them (the oldest forgotten first). Safe for concurrent use.
type unacked struct {
	max int

	mu    sync.Mutex
	byKey map[string]*list.Element // of unackedEntry
	order *list.List               // oldest first
}

type unackedEntry struct {
	key string
	p   *produce
}

func newUnacked(max int) *unacked {
	return &unacked{max: max, byKey: map[string]*list.Element{}, order: list.New()}
}

func unackedKey(clientKey, topic, id string) string {
	return clientKey + "\x00" + topic + "\x00" + id
}

// put remembers p under key, in place of what was there.
func (u *unacked) put(key string, p *produce) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if e, ok := u.byKey[key]; ok {
		u.order.Remove(e)
	}
	u.byKey[key] = u.order.PushBack(unackedEntry{key: key, p: p})
	for u.order.Len() > u.max {
		oldest := u.order.Front()
		u.order.Remove(oldest)
		delete(u.byKey, oldest.Value.(unackedEntry).key)
	}
}

// take returns the produce under key, forgetting it, or nil.
func (u *unacked) take(key string) *produce {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.byKey[key]
	if !ok {
		return nil
	}
	u.order.Remove(e)
	delete(u.byKey, key)
	return e.Value.(unackedEntry).p
}

// len is the number of produces remembered.
func (u *unacked) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.order.Len()
}
