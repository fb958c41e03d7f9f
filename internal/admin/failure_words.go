package admin

import (
	"net/http"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/types"
)

// FailureWords says in words why an attempt failed, for an attempt the circuit counted as a failure (a
// timeout, a connection error, a 5xx, a 429, a broker that did not take the message): "the endpoint
// answered 503 Service Unavailable", "no answer within the timeout", "the connection to … was
// refused"; ok is false for any other attempt (a success, a 4xx or 3xx refusal).
func FailureWords(a types.Attempt) (words string, ok bool) {
	code := a.StatusCode
	switch {
	case a.Error == "":
		return "", false
	case code != 0 && code < 500 && code != http.StatusTooManyRequests:
		return "", false // a refusal by an endpoint that is up
	case code != 0:
		return api.AnswerWords(code), true
	}
	return a.Error, true // a destination's own words (egress.Words for a connection's failure)
}
