package breaker

import (
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// Sends is this process's attempts to each webhook, from just before their requests go out until their
// outcomes are counted, and the failures' counts they hold back: a failure is counted only once every
// attempt this process sent to the same webhook at or before the failure's answer (by the millisecond)
// has ended and, if it succeeded, has been counted (its count's reply is in). So a success whose
// request overlapped a failure reaches the circuit before the failure does, whatever order the answers
// came back in and the counts were sent in, and rdb.Count drops the failure. A failure held back is
// handed, once released, to whoever released it (Hold, End, Counted return it), who counts it. Each
// failure also carries the newest success this process counted for its webhook (SeenOK): counted
// while no circuit was stored, it left nothing in Redis. An attempt open longer than maxOpen (one
// whose end was lost) holds nothing back.
//
// Stamps are milliseconds, and the rule counts a failure only if it was sent after the newest success
// was answered: in the same millisecond, it cannot know. What this process saw, it knows: an attempt
// it sends after it counted a success answered at t is stamped sent at t+1 at the earliest (its
// Ticket.Sent), and an answer never before its send, so one process's attempts one after another
// (or on a test's frozen clock) are in their order. Safe for concurrent use; make it with NewSends.
type Sends struct {
	mu      sync.Mutex
	next    uint64
	hooks   map[string]*webhookSends
	maxOpen time.Duration
	now     func() time.Time
}

// webhookSends is one webhook's part of Sends; dropped once nothing is open or held.
type webhookSends struct {
	open   map[uint64]int64 // attempts not ended, or successes not yet counted: their sends (ms)
	seenOK int64            // the newest success counted here: its answer (ms)
	held   []Held
}

// Ticket is one attempt's place in Sends, from Start; the zero Ticket is none (an attempt not sent).
type Ticket struct {
	webhookID string
	id        uint64
	Sent      time.Time // the attempt's send stamp for the circuit (Outcome.Sent)
}

// keptSeen is how long a webhook's newest success counted here is kept once nothing of it is open or
// held: what the stamps of its next attempt need (the same millisecond) and more.
const keptSeen = time.Second

// maxIdle is how many webhooks with nothing open or held Sends keeps (for their seenOK) before it
// forgets those whose seenOK is older than keptSeen.
const maxIdle = 4096

// Held is a failure's count held back by Sends, with what its caller gave Hold.
type Held struct {
	Outcome Outcome
	Data    any
}

// NewSends is an empty Sends whose attempts hold failures back for maxOpen at most, on the clock now.
func NewSends(maxOpen time.Duration, now func() time.Time) *Sends {
	return &Sends{hooks: map[string]*webhookSends{}, maxOpen: maxOpen, now: now}
}

// Start opens an attempt to webhookID whose request is about to go out at sent (taken before it goes
// out) and returns its ticket, stamped sent, or one millisecond after the newest success counted here
// if that is later.
func (s *Sends) Start(webhookID string, sent time.Time) Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.hooks) > maxIdle {
		s.forgetIdle()
	}
	s.next++
	w := s.hooks[webhookID]
	if w == nil {
		w = &webhookSends{open: map[uint64]int64{}}
		s.hooks[webhookID] = w
	}
	stamp := max(sent.UnixMilli(), w.seenOK+1)
	w.open[s.next] = stamp
	return Ticket{webhookID: webhookID, id: s.next, Sent: time.UnixMilli(stamp)}
}

// forgetIdle forgets the webhooks with nothing open or held whose seenOK is older than keptSeen.
func (s *Sends) forgetIdle() {
	old := s.now().Add(-keptSeen).UnixMilli()
	for id, w := range s.hooks {
		if len(w.open) == 0 && len(w.held) == 0 && w.seenOK < old {
			delete(s.hooks, id)
		}
	}
}

// Hold closes the ticket of a failure about to be counted (o, of kind rdb.CountFailure) and holds its
// count back while an attempt this process sent to the webhook at or before o.Answered is open: then
// it keeps (o, data) and returns true. Otherwise it sets o.SeenOK. It returns the failures its
// ticket's close released, to be counted after o.
func (s *Sends) Hold(t Ticket, o *Outcome, data any) (held bool, released []Held) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.close(t, o.WebhookID)
	if w == nil {
		return false, nil
	}
	if answered, _ := o.stamps(s.now()); o.Kind == rdb.CountFailure && s.blocked(w, answered) {
		w.held = append(w.held, Held{Outcome: *o, Data: data})
		return true, s.release(o.WebhookID, w)
	}
	o.SeenOK = rdb.MilliTime(w.seenOK)
	return false, s.release(o.WebhookID, w)
}

// End closes the ticket of an attempt whose outcome is not counted as a success (a rejection, a
// failure not held, an attempt whose outcome is not recorded) and returns the failures it released.
func (s *Sends) End(t Ticket) []Held {
	if t.id == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.close(t, t.webhookID)
	if w == nil {
		return nil
	}
	return s.release(t.webhookID, w)
}

// Counted closes the tickets of the successes among outs once their count's reply is in (or the count
// failed: its successes reach the circuit as the next failures' SeenOK), records them as seen, and
// returns the failures they released.
func (s *Sends) Counted(outs []Outcome) []Held {
	var released []Held
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range outs {
		if o.Kind != rdb.CountSuccess {
			continue
		}
		w := s.close(o.Ticket, o.WebhookID)
		if w == nil {
			continue
		}
		answered, _ := o.stamps(s.now())
		w.seenOK = max(w.seenOK, answered)
		released = append(released, s.release(o.WebhookID, w)...)
	}
	return released
}

// close closes ticket t (if any) and returns its webhook's part, nil when there is none.
func (s *Sends) close(t Ticket, webhookID string) *webhookSends {
	w := s.hooks[webhookID]
	if w != nil && t.id != 0 {
		delete(w.open, t.id)
	}
	return w
}

// blocked reports whether an attempt sent at or before answered (ms), and open for less than maxOpen,
// is open.
func (s *Sends) blocked(w *webhookSends, answered int64) bool {
	stale := s.now().Add(-s.maxOpen).UnixMilli()
	for _, sent := range w.open {
		if sent <= answered && sent > stale {
			return true
		}
	}
	return false
}

// release returns the held failures of w no longer blocked, each with its SeenOK set, and drops w from
// Sends once nothing of it is open or held and its seenOK is older than keptSeen.
func (s *Sends) release(webhookID string, w *webhookSends) []Held {
	var out []Held
	kept := w.held[:0]
	for _, h := range w.held {
		if answered, _ := h.Outcome.stamps(s.now()); s.blocked(w, answered) {
			kept = append(kept, h)
			continue
		}
		h.Outcome.SeenOK = rdb.MilliTime(w.seenOK)
		out = append(out, h)
	}
	clear(w.held[len(kept):])
	w.held = kept
	if len(w.open) == 0 && len(w.held) == 0 && w.seenOK < s.now().Add(-keptSeen).UnixMilli() {
		delete(s.hooks, webhookID)
	}
	return out
}
