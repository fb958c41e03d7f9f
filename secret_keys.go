package webhooks

// Secrets at rest: re-sealing the registry under the first of Options.SecretKeys.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// reencryptPage is how many registry entries one HSCAN of Reencrypt asks for.
const reencryptPage = 256

// Reencrypt re-seals, under the first of Options.SecretKeys, every webhook's sealed fields that are in
// clear or sealed under another key, and returns how many webhooks it rewrote. It is the rotation
// step between adding a new key (first) and dropping the old one: once it returns without error, no
// webhook needs the old key. Each webhook is rewritten by the registry's save script, conditional on
// the JSON it read, so it cannot undo a concurrent Update (it reads that webhook again). It pages the
// registry (HSCAN), is idempotent (a second run rewrites nothing and returns 0), and may run on any
// replica while the others work. Cached OAuth2 tokens are not rewritten: they expire, and one sealed
// under a dropped key is fetched again. Without SecretKeys it does nothing. A webhook sealed under a
// key not configured stops it with ErrSecretKey.
func (r *WebhookRepo) Reencrypt(ctx context.Context) (int, error) {
	if !r.ring.Enabled() {
		return 0, nil
	}
	n := 0
	var cursor uint64
	for {
		kvs, next, err := rdb.ScanWebhookRecords(ctx, r.rdb, r.keys, cursor, reencryptPage)
		if err != nil {
			return n, fmt.Errorf("webhooks: reencrypt: %w", err)
		}
		for i := 0; i+1 < len(kvs); i += 2 {
			if r.sealedCurrent(kvs[i+1]) {
				continue
			}
			done, err := r.reencryptOne(ctx, kvs[i])
			if err != nil {
				return n, err
			}
			if done {
				n++
			}
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// sealedCurrent reports whether a stored webhook's sealed fields are all sealed under the first key
// (a value that does not decode is left alone).
func (r *WebhookRepo) sealedCurrent(raw string) bool {
	var s storedWebhook
	if json.Unmarshal([]byte(raw), &s) != nil {
		return true
	}
	if r.ring.Enabled() && s.ClearURLPassword() {
		return false
	}
	for _, f := range s.SealedFields() {
		if !r.ring.Current(*f) {
			return false
		}
	}
	return true
}

// reencryptOne rewrites one webhook as it is, which seals it under the first key; it reports false
// when the webhook is gone or already current.
func (r *WebhookRepo) reencryptOne(ctx context.Context, id string) (bool, error) {
	for range maxSaveTries {
		s, raw, err := r.load(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if s.Unsealed != nil {
			return false, fmt.Errorf("webhooks: reencrypt: %w", s.Unsealed)
		}
		if r.sealedCurrent(raw) {
			return false, nil
		}
		if err := r.saveRaw(ctx, id, s, raw, s); !errors.Is(err, ErrConflict) {
			return err == nil, err
		}
	}
	return false, fmt.Errorf("webhooks: reencrypt webhook %s: %w", id, ErrConflict)
}
