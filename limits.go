package webhooks

import "sync"

// inFlight counts one Dispatcher's attempts per webhook, inline and worker alike, so that one webhook
// holds at most Options.MaxInFlightPerWebhook of them: a hung subscriber holds only its own slots.
type inFlight struct {
	mu  sync.Mutex
	n   map[string]int
	max int
}

func newInFlight(max int) *inFlight { return &inFlight{n: map[string]int{}, max: max} }

// take takes up to want slots of a webhook and returns how many it took.
func (f *inFlight) take(webhookID string, want int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := min(want, f.max-f.n[webhookID])
	if got <= 0 {
		return 0
	}
	f.n[webhookID] += got
	return got
}

// room is how many more attempts a webhook may start now.
func (f *inFlight) room(webhookID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.max - f.n[webhookID]
}

// release gives back one slot of a webhook.
func (f *inFlight) release(webhookID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[webhookID]--; f.n[webhookID] <= 0 {
		delete(f.n, webhookID)
	}
}
