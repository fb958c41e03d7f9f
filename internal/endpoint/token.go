package endpoint

// OAuth2 client-credentials tokens, fetched by one replica at a time and shared by all through Redis.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/sealed"
	"github.com/smartdrop/webhooks/internal/types"
)

const (
	// defaultTokenLife is the life of a token whose response gives no expires_in.
	defaultTokenLife = 5 * time.Minute
	// maxTokenLife bounds how long a token is cached, whatever its expires_in.
	maxTokenLife = 24 * time.Hour
	// maxTokenMargin bounds how long before its expiry a token stops being used.
	maxTokenMargin = time.Minute
	// tokenPoll is how often a replica waiting for another's fetch reads the token again.
	tokenPoll = 20 * time.Millisecond
	// maxTokenResponse bounds the token endpoint's response read.
	maxTokenResponse = 64 << 10
)

// Tokens fetches OAuth2 tokens and caches them in Redis, sealed, for every replica.
type Tokens struct {
	redis     redis.UniversalClient
	keys      rdb.Keys
	ring      *sealed.Ring
	client    *http.Client
	timeout   time.Duration
	now       func() time.Time
	userAgent string
}

// Token is a token as read from Redis, with the stored value it was read from.
type Token struct {
	// Value is the access token.
	Value string
	raw   string
}

// Get returns the webhook's token: the cached one while it is valid, else one fetched by this replica
// under the lock, or by another that holds it (read again until it appears, within the timeout).
func (s *Tokens) Get(ctx context.Context, webhookID string, o *types.OAuth2ClientCredentials) (Token, error) {
	deadline := time.Now().Add(s.timeout)
	for {
		tok, ok, err := s.cached(ctx, webhookID, o)
		if err != nil || ok {
			return tok, err
		}
		lock := rand.Text()
		won, err := s.redis.SetNX(ctx, s.keys.TokenLock(webhookID), lock, s.timeout).Result()
		if err != nil {
			return Token{}, fmt.Errorf("oauth2 token lock: %w", err)
		}
		if won {
			tok, err := s.fetchLocked(ctx, webhookID, o)
			_ = rdb.DelIfEqual.Run(context.WithoutCancel(ctx), s.redis, []string{s.keys.TokenLock(webhookID)}, lock).Err()
			return tok, err
		}
		if time.Now().After(deadline) {
			return Token{}, errors.New("oauth2 token: another replica's fetch did not end in time")
		}
		select {
		case <-ctx.Done():
			return Token{}, ctx.Err()
		case <-time.After(tokenPoll):
		}
	}
}

// fetchLocked fetches the token under the lock, unless a replica stored one just before it was taken.
func (s *Tokens) fetchLocked(ctx context.Context, webhookID string, o *types.OAuth2ClientCredentials) (Token, error) {
	if tok, ok, err := s.cached(ctx, webhookID, o); err != nil || ok {
		return tok, err
	}
	token, life, err := s.fetch(ctx, o)
	if err != nil {
		return Token{}, err
	}
	ttl := life - min(life/10, maxTokenMargin)
	plain := strconv.FormatInt(s.now().Add(ttl).UnixMilli(), 10) + " " + fingerprint(o) + " " + token
	raw, err := s.ring.Seal(plain, "oauth/"+webhookID)
	if err != nil {
		return Token{}, err
	}
	if err := s.redis.Set(ctx, s.keys.Token(webhookID), raw, ttl).Err(); err != nil {
		return Token{}, fmt.Errorf("oauth2 token store: %w", err)
	}
	return Token{Value: token, raw: raw}, nil
}

// cached reads the webhook's token; ok is false when none is stored, it has expired, it was fetched
// with other credentials, or it is sealed under a key no longer configured.
func (s *Tokens) cached(ctx context.Context, webhookID string, o *types.OAuth2ClientCredentials) (Token, bool, error) {
	raw, err := s.redis.Get(ctx, s.keys.Token(webhookID)).Result()
	if errors.Is(err, redis.Nil) {
		return Token{}, false, nil
	}
	if err != nil {
		return Token{}, false, fmt.Errorf("oauth2 token read: %w", err)
	}
	plain, err := s.ring.Open(raw, "oauth/"+webhookID)
	if err != nil { // sealed under a key since dropped: a cache, so fetched again
		return Token{}, false, nil
	}
	exp, rest, _ := strings.Cut(plain, " ")
	fp, token, _ := strings.Cut(rest, " ")
	ms, _ := strconv.ParseInt(exp, 10, 64)
	if token == "" || fp != fingerprint(o) || s.now().UnixMilli() >= ms {
		return Token{}, false, nil
	}
	return Token{Value: token, raw: raw}, true, nil
}

// Drop removes a token the endpoint refused, unless another replica has already replaced it.
func (s *Tokens) Drop(ctx context.Context, webhookID string, tok Token) error {
	if err := rdb.DelIfEqual.Run(ctx, s.redis, []string{s.keys.Token(webhookID)}, tok.raw).Err(); err != nil {
		return fmt.Errorf("oauth2 token drop: %w", err)
	}
	return nil
}

// fingerprint names the credentials a token was fetched with, so a token outlives no change of them.
func fingerprint(o *types.OAuth2ClientCredentials) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{o.TokenURL, o.ClientID, o.ClientSecret,
		strings.Join(o.Scopes, " "), o.Audience}, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// fetch runs the client-credentials grant through the guarded client: the client authenticates with
// HTTP basic (RFC 6749 §2.3.1). Errors name the status, never a credential.
func (s *Tokens) fetch(ctx context.Context, o *types.OAuth2ClientCredentials) (string, time.Duration, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(o.Scopes) > 0 {
		form.Set("scope", strings.Join(o.Scopes, " "))
	}
	if o.Audience != "" {
		form.Set("audience", o.Audience)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, errors.New("oauth2 token: bad token URL")
	}
	req.Header["Content-Type"], req.Header["Accept"] = []string{"application/x-www-form-urlencoded"}, []string{"application/json"}
	req.Header["User-Agent"] = []string{s.userAgent}
	req.SetBasicAuth(url.QueryEscape(o.ClientID), url.QueryEscape(o.ClientSecret))
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", 0, fmt.Errorf("oauth2 token: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("oauth2 token: the token endpoint answered HTTP %d", resp.StatusCode)
	}
	return parseTokenResponse(io.LimitReader(resp.Body, maxTokenResponse))
}

// parseTokenResponse reads a token endpoint's answer: its access token, and how long to keep it.
func parseTokenResponse(r io.Reader) (token string, life time.Duration, err error) {
	var body struct {
		AccessToken string    `json:"access_token"`
		TokenType   string    `json:"token_type"`
		ExpiresIn   expiresIn `json:"expires_in"`
	}
	if err := json.NewDecoder(r).Decode(&body); err != nil {
		return "", 0, errors.New("oauth2 token: the token endpoint's answer is not a token response")
	}
	switch {
	case body.AccessToken == "" || strings.ContainsAny(body.AccessToken, " \t\r\n"):
		return "", 0, errors.New("oauth2 token: the token endpoint gave no usable access_token")
	case body.TokenType != "" && !strings.EqualFold(body.TokenType, "bearer"):
		return "", 0, fmt.Errorf("oauth2 token: token_type %.40q is not bearer", body.TokenType)
	}
	life = defaultTokenLife
	if body.ExpiresIn > 0 {
		life = min(time.Duration(min(int64(body.ExpiresIn), int64(maxTokenLife/time.Second)))*time.Second, maxTokenLife)
	}
	return body.AccessToken, life, nil
}

// expiresIn is a token response's expires_in, in seconds: a JSON number, or a string of one, as some
// providers send it (PayPal, Azure AD v1). Anything else reads as 0: no expiry given.
type expiresIn int64

// UnmarshalJSON reads a number or a numeric string; it never fails, so an odd expires_in does not make
// an otherwise good token unusable.
func (e *expiresIn) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f < 0 || f > float64(maxTokenLife/time.Second) {
			n = 0
			if ferr == nil && f > 0 {
				n = int64(maxTokenLife / time.Second)
			}
		} else {
			n = int64(f)
		}
	}
	*e = expiresIn(n)
	return nil
}
