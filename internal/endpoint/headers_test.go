package endpoint

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smartdrop/webhooks/internal/types"
)

// TestHeaderNamesAliasingReservedOnesAreRefused: a custom header that some server reads as a reserved
// one ('_' for '-', any case) is refused, and so are two headers one server would read as one.
func TestHeaderNamesAliasingReservedOnesAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"signature alias", map[string]string{"Webhook_Signature": "v1,x"}, false},
		{"id alias, lower case", map[string]string{"webhook_id": "x"}, false},
		{"length alias", map[string]string{"Content_Length": "1"}, false},
		{"mixed", map[string]string{"WEBHOOK-timestamp": "1"}, false},
		{"two spellings of one header", map[string]string{"X-Api-Key": "a", "X_Api_Key": "b"}, false},
		{"a name over the bound", map[string]string{"X-" + strings.Repeat("a", MaxHeaderNameLen): "a"}, false},
		{"an underscore elsewhere", map[string]string{"X_Team": "billing"}, true},
		{"authorization", map[string]string{"Authorization": "Bearer x"}, true},
	} {
		err := ValidateHeaders(tc.headers)
		if tc.ok {
			assert.NoError(t, err, tc.name)
		} else {
			assert.ErrorIs(t, err, types.ErrInvalidWebhook, tc.name)
		}
	}
}
