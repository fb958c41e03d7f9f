package rdb

// The constants the scripts and the Go code share: the record codec's bytes and lengths, and the
// scripts' arguments and replies. A script names one as {{Name}}; Placeholders gives each its value.

import "time"

const (
	// TokenLen is the length of a lease token: 8 random bytes, hex encoded.
	TokenLen = 16
	// RecordHeadLen is the length of a record's fixed head: its lease token, lease state, status and
	// format version (record.go), the part scripts read and rewrite.
	RecordHeadLen = TokenLen + 3
	// RecordVersion is the format version of a record with no traceparent or order key.
	RecordVersion = '1'
	// RecordVersionTraced is RecordVersion with a traceparent after the history.
	RecordVersionTraced = '2'
	// RecordVersionOrdered is RecordVersionTraced with an order key after the traceparent.
	RecordVersionOrdered = '3'

	// A record's lease state: an attempt holds the lease, its outcome is recorded, or no lease.
	LeaseHeld    = 'L'
	LeaseSettled = '+'
	LeaseNone    = '-'
	// A record's status: pending, succeeded, failed, skipped.
	StatusPending = 'p'
	StatusSuccess = 's'
	StatusFailed  = 'f'
	StatusSkipped = 'k'
)

// Schedule modes of an outcome, as the Outcome script takes them.
const (
	ScheduleQueued = "0" // a worker's lease: leave the queue when final
	ScheduleInline = "1" // leased by the claim: leave the inline zset, else as ScheduleQueued
	ScheduleRetime = "2" // as ScheduleQueued, and retime the webhook when final
)

// The Outcome script's first reply per outcome.
const (
	OutcomeLeaseLost = 0
	OutcomeRecorded  = 1
)

// Outcomes as the Count script takes them, and the events it reports.
const (
	CountSuccess                        = "s" // a 2xx: resets the count and closes the circuit
	CountFailure                        = "f" // a timeout, connection error, 5xx or 429: counts towards BreakAfter
	CountRejected                       = "r" // any other failed attempt (4xx, 3xx): in the run of failures, not in the count
	CountSkipped                        = "k" // a delivery its webhook's transformation skipped: counted per hour only
	EventNone, EventOpened, EventClosed = 0, 1, 2
	// MaxBreakAfter bounds Options.BreakAfter: a circuit keeps the answer times of at most this many
	// failures.
	MaxBreakAfter = 100
	// CircuitQuiet is how long a circuit with no failures left is kept after its last failure; then a
	// success deletes it (the newest success's answer outlives it in the webhook's hourly hash, field
	// "ok", so that a failure sent before that answer but counted after it is still not counted).
	CircuitQuiet                                       = time.Minute
	ProbeClosed, ProbeGranted, ProbeWaiting, ProbeHeld = 0, 1, 2, 3 // waiting: the open period has not ended
)

const (
	// OrderMarker starts the value of an ordered event's marker; no request body (a JSON object) does.
	OrderMarker = "\x00"
	// OrderConflictReply is the error the unordered claim script gives for an id reserved by a marker.
	OrderConflictReply = "webhooks: order key conflict"
	// ClaimWaiting is the claim scripts' reply for an ordered pair created behind its key's head.
	ClaimWaiting = 3
	// RedeliverWaiting is the ordered redeliver script's reply for a delivery reset behind its key's
	// head.
	RedeliverWaiting = 2
)

// How an outcome of settle moves its delivery's sequence when it is final (the OrderedOutcome script).
const (
	OrderNone      = "0" // an unordered delivery
	OrderOnSuccess = "1" // the next goes on after a success only: a failure blocks the key (BlockKeyOnFailure)
	OrderOnFinal   = "2" // the next goes on after a success or a failure for good
)

// The claim script's replay modes (ARGV).
const (
	ReplayOff   = "0" // Options.ReplayIndex is off: no entry
	ReplayAdd   = "1" // add the event's entry when its body is first stored
	ReplayPrune = "2" // the same, then prune the key's old entries
)

const (
	// HourlySlots is how many hours the counters keep, and how many GET /webhooks/{id}/stats serves.
	HourlySlots = 24
	// HourlyTTL is how long a webhook's hourly counters outlive their last write.
	HourlyTTL = 25 * time.Hour
)

// The RetryNow script's replies.
const (
	RetryGone = iota
	RetryNotPending
	RetryInFlight
	RetryNotQueued
	RetryDue
)

// The Redeliver script's first reply.
const (
	RedeliverUnchanged = 0
	RedeliverReset     = 1
	// RedeliverExpired: the event's body has expired (Options.PayloadRetention, or it was evicted);
	// nothing was written.
	RedeliverExpired = 3
)

// ClaimCreated is the Claim script's reply for a pair it created; ClaimConflict its whole reply for an
// event whose id names another event.
const (
	ClaimCreated  = 1
	ClaimConflict = 2
)

// The Lease script's replies for a candidate it did not lease.
const (
	LeaseNotDue    = 0
	LeaseExpired   = 1
	LeaseNotRecord = 2
)

// The Unschedule script's replies.
const (
	UnscheduleLeaseLost = 0
	UnscheduleDone      = 1
)

// The SaveWebhook script's replies.
const (
	SaveConflict  = 0
	SaveDone      = 1
	SaveOverQuota = 2
	SaveOverSize  = 3
)

// EventMark starts a stored event with a fingerprint (a body starts with '{').
const EventMark = "\x01"

// FingerprintLen is the length of a stored fingerprint.
const FingerprintLen = 32
