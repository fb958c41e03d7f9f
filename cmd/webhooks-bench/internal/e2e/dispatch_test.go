package e2e

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smartdrop/webhooks"
)

func TestTallyCountsEachPairOnce(t *testing.T) {
	t.Parallel()
	ok := func() webhooks.Result {
		return webhooks.Result{WebhookID: "wh", Delivery: &webhooks.Delivery{Status: webhooks.StatusSuccess}}
	}
	dup := webhooks.Result{WebhookID: "wh", Duplicate: true, Delivery: &webhooks.Delivery{Status: webhooks.StatusSuccess}}
	pending := webhooks.Result{WebhookID: "wh", Delivery: &webhooks.Delivery{Status: webhooks.StatusPending, LastError: "HTTP 500"}}
	deferred := webhooks.Result{WebhookID: "wh", Err: errors.New("left to the worker"), Delivery: &webhooks.Delivery{Status: webhooks.StatusPending}}
	lost := webhooks.Result{WebhookID: "wh", Err: errors.New("redis down")}
	tests := []struct {
		name                  string
		results               []webhooks.Result
		want                  int
		wantDup, deferOK      bool
		ok, failed, deferredN int
		wantErr               bool
	}{
		{"all delivered", []webhooks.Result{ok(), ok()}, 2, false, true, 2, 0, 0, false},
		{"a duplicate where a fresh pair was wanted", []webhooks.Result{ok(), dup}, 2, false, true, 1, 1, 0, true},
		{"all duplicates", []webhooks.Result{dup, dup}, 2, true, true, 2, 0, 0, false},
		{"a fresh pair in the duplicate phase", []webhooks.Result{dup, ok()}, 2, true, true, 1, 1, 0, true},
		{"an attempt that failed is not a delivery", []webhooks.Result{ok(), pending}, 2, false, true, 1, 1, 0, true},
		{"deferred, with a worker", []webhooks.Result{ok(), deferred}, 2, false, true, 1, 0, 1, false},
		{"deferred, without a worker", []webhooks.Result{ok(), deferred}, 2, false, false, 1, 1, 0, true},
		{"not accepted", []webhooks.Result{ok(), lost}, 2, false, true, 1, 1, 0, true},
		{"a target missing", []webhooks.Result{ok()}, 2, false, true, 0, 2, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, failed, deferred, err := Tally("evt", tt.results, tt.want, tt.wantDup, tt.deferOK)
			assert.Equal(t, []int{tt.ok, tt.failed, tt.deferredN}, []int{ok, failed, deferred})
			assert.Equal(t, tt.wantErr, err != nil, "error: %v", err)
		})
	}
}
