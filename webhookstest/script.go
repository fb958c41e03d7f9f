package webhookstest

import (
	"net/http"
	"time"
)

// Answer is how a Receiver answers one request.
type Answer struct {
	// Status is the response status; 0 means 200.
	Status int
	// Header holds response headers to set, e.g. Retry-After.
	Header http.Header
	// Body is the response body.
	Body string
	// Delay holds the request this long before answering; UntilReleased holds it until Release.
	// With both, whichever comes first. Either ends early when the client gives up (the
	// dispatcher's Options.Timeout) or the Receiver closes.
	Delay         time.Duration
	UntilReleased bool
}

func (a Answer) status() int {
	if a.Status == 0 {
		return http.StatusOK
	}
	return a.Status
}

// Script decides the Answer to each verified request (and to every request while no key is set). It
// is called concurrently for concurrent requests; req.Attempt counts the requests of its delivery.
type Script func(req Request) Answer

// Succeed answers 200.
func Succeed() Script { return Always(http.StatusOK) }

// Always answers status.
func Always(status int) Script {
	return func(Request) Answer { return Answer{Status: status} }
}

// Gone answers 410 Gone, which fails the delivery at once and disables the webhook.
func Gone() Script { return Always(http.StatusGone) }

// FailTimes answers the first n attempts of each delivery (by webhook-id) with status, and 200 from
// the n+1st on.
func FailTimes(n, status int) Script {
	return func(req Request) Answer {
		if req.Attempt <= n {
			return Answer{Status: status}
		}
		return Answer{Status: http.StatusOK}
	}
}

// Hang holds every request until Release, then answers 200.
func Hang() Script {
	return func(Request) Answer { return Answer{UntilReleased: true} }
}

// HangFor holds every request for d, then answers 200: longer than the dispatcher's Options.Timeout,
// it is a timeout.
func HangFor(d time.Duration) Script {
	return func(Request) Answer { return Answer{Delay: d} }
}
