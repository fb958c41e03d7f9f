package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example published by the Standard Webhooks specification and used by
// its reference libraries.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustDecode(t testing.TB, secret string) []byte {
	t.Helper()
	key, err := decodeSecret(secret)
	require.NoError(t, err)
	return key
}

func TestSignaturesSpecVector(t *testing.T) {
	t.Parallel()
	got := signatures(specMsgID, time.Unix(specTimestamp, 0), []byte(specBody), mustSigningKey(t, specSecret))
	assert.Equal(t, specSignature, got)

	h := http.Header{}
	SetHeaders(h, specMsgID, time.Unix(specTimestamp, 0), []byte(specBody), mustSigningKey(t, specSecret))
	assert.Equal(t, http.Header{
		"Webhook-Id":        {specMsgID},
		"Webhook-Timestamp": {strconv.Itoa(specTimestamp)},
		"Webhook-Signature": {specSignature},
	}, h)
}

func TestSignaturesMultipleSecrets(t *testing.T) {
	t.Parallel()
	a, b := mustSigningKey(t, specSecret), mustSigningKey(t, mustNewSecret(t))
	ts := time.Unix(specTimestamp, 0)
	got := signatures(specMsgID, ts, []byte(specBody), a, b)
	assert.Equal(t, specSignature+" "+signatures(specMsgID, ts, []byte(specBody), b), got)
	assert.Empty(t, signatures(specMsgID, ts, []byte(specBody)))
}

func mustNewSecret(t testing.TB) string {
	t.Helper()
	s, err := NewSecret(V1)
	require.NoError(t, err)
	return s
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	s1, s2 := mustNewSecret(t), mustNewSecret(t)
	assert.NotEqual(t, s1, s2)
	require.True(t, strings.HasPrefix(s1, secretPrefix))
	assert.Len(t, mustDecode(t, s1), 32)
}

func TestDecodeSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secret  string
		wantLen int
		wantErr bool
	}{
		{name: "with prefix", secret: specSecret, wantLen: 24},
		{name: "without prefix", secret: strings.TrimPrefix(specSecret, secretPrefix), wantLen: 24},
		{name: "empty", secret: "", wantErr: true},
		{name: "prefix only", secret: secretPrefix, wantErr: true},
		{name: "bad base64", secret: "whsec_not*base64!", wantErr: true},
		{name: "embedded space", secret: "whsec_YWJj ZA==", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := decodeSecret(tt.secret)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, key, tt.wantLen)
		})
	}
}

func TestCanonicalHeaderNames(t *testing.T) {
	t.Parallel()
	for name, canonical := range map[string]string{"webhook-id": canonicalID, "webhook-timestamp": canonicalTimestamp, "webhook-signature": canonicalSignature} {
		assert.Equal(t, http.CanonicalHeaderKey(name), canonical)
	}
}

// TestOneKeySignsConcurrently: one v1 key (its HMAC states pooled) signing different messages from
// many goroutines at once gives each message the signature of a fresh HMAC of its own content, the
// spec vector included (run with -race).
func TestOneKeySignsConcurrently(t *testing.T) {
	t.Parallel()
	key := mustSigningKey(t, specSecret)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 100 {
				msgID, body := specMsgID, []byte(specBody)
				if (g+i)%3 != 0 {
					msgID, body = fmt.Sprintf("msg_%d_%d", g, i), []byte(strings.Repeat("x", g*i%700))
				}
				mac := hmac.New(sha256.New, mustDecode(t, specSecret))
				mac.Write([]byte(msgID + "." + strconv.Itoa(specTimestamp) + "."))
				mac.Write(body)
				want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
				assert.Equal(t, want, key.Sign(msgID, specTimestamp, body))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, specSignature, key.Sign(specMsgID, specTimestamp, []byte(specBody)))
}
