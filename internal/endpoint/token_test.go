package endpoint

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTokenResponseExpiresIn: expires_in is read as a number or a numeric string (PayPal and Azure AD
// v1 send "3599"), bounded by maxTokenLife; a missing, zero, negative or unreadable one means
// defaultTokenLife, and never makes a good token unusable.
func TestTokenResponseExpiresIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expiresIn string
		life      time.Duration
	}{
		{`3599`, 3599 * time.Second}, {`"3599"`, 3599 * time.Second}, {`60.5`, 60 * time.Second}, {`"60"`, time.Minute},
		{`0`, defaultTokenLife}, {`-5`, defaultTokenLife}, {`"soon"`, defaultTokenLife}, {`null`, defaultTokenLife},
		{`""`, defaultTokenLife}, {`99999999999999999999`, maxTokenLife}, {`"1e12"`, maxTokenLife},
	} {
		body := `{"access_token":"t0k","token_type":"Bearer","expires_in":` + tc.expiresIn + `}`
		tok, life, err := parseTokenResponse(strings.NewReader(body))
		require.NoError(t, err, tc.expiresIn)
		assert.Equal(t, "t0k", tok, tc.expiresIn)
		assert.Equal(t, tc.life, life, tc.expiresIn)
	}
	tok, life, err := parseTokenResponse(strings.NewReader(`{"access_token":"t0k"}`))
	require.NoError(t, err)
	assert.Equal(t, "t0k", tok)
	assert.Equal(t, defaultTokenLife, life, "no expires_in")
	_, _, err = parseTokenResponse(strings.NewReader(`{"access_token":"t0k","token_type":"mac"}`))
	assert.Error(t, err, "not a bearer token")
}
