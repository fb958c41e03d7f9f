package rdb

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The scripts. Each is one file of lua/, named after it, that opens with its KEYS / ARGV / returns
// block. Two conventions make the files whole scripts:
//
//   - A line "--#include NAME" is replaced by lua/lib/NAME.lua, a local function or two that several
//     scripts share; a library included twice into one script (directly or by another library) is
//     included once, at its first place.
//   - "{{Name}}" is replaced by the value of the constant Name of this package (Placeholders): the
//     record codec's bytes and lengths, the replies and modes the Go code reads and writes. No other
//     text is spliced into a script.
var (
	AcquireProbe     = load("acquire_probe")
	Adopt            = load("adopt")
	Claim            = load("claim")
	Count            = load("count")
	CountFailed      = load("count_failed")
	DelIfEqual       = load("del_if_equal")
	EventTypes       = load("event_types")
	FindDuplicates   = load("find_duplicates")
	IndexedWebhooks  = load("indexed_webhooks")
	Lease            = load("lease")
	OrderedClaim     = load("ordered_claim")
	OrderedOutcome   = load("ordered_outcome")
	OrderedRedeliver = load("ordered_redeliver")
	Outcome          = load("outcome")
	ProbeNow         = load("probe_now")
	Rate             = load("rate")
	Redeliver        = load("redeliver")
	ReleaseProbe     = load("release_probe")
	ReserveOrder     = load("reserve_order")
	RetryNow         = load("retry_now")
	SaveEventType    = load("save_event_type")
	SaveWebhook      = load("save_webhook")
	Search           = load("search")
	ShardCount       = load("shard_count")
	StatsLeases      = load("stats_leases")
	StatsQueues      = load("stats_queues")
	TakeConcurrency  = load("take_concurrency")
	TakeBoth         = load("take_both")
	Unschedule       = load("unschedule")
	WakeParked       = load("wake_parked")
)

//go:embed lua
var files embed.FS

// Placeholders gives each {{Name}} of the scripts its value.
var Placeholders = strings.NewReplacer(
	"{{TokenLen}}", strconv.Itoa(TokenLen),
	"{{RecordHeadLen}}", strconv.Itoa(RecordHeadLen),
	"{{LeaseHeld}}", string(rune(LeaseHeld)),
	"{{LeaseSettled}}", string(rune(LeaseSettled)),
	"{{LeaseNone}}", string(rune(LeaseNone)),
	"{{StatusPending}}", string(rune(StatusPending)),
	"{{FingerprintLen}}", strconv.Itoa(FingerprintLen),
	"{{ScheduleInline}}", ScheduleInline,
	"{{ScheduleRetime}}", ScheduleRetime,
	"{{OutcomeLeaseLost}}", strconv.Itoa(OutcomeLeaseLost),
	"{{OutcomeRecorded}}", strconv.Itoa(OutcomeRecorded),
	"{{ProbeClosed}}", strconv.Itoa(ProbeClosed),
	"{{MaxBreakAfter}}", strconv.Itoa(MaxBreakAfter),
	"{{CircuitQuietMs}}", strconv.FormatInt(CircuitQuiet.Milliseconds(), 10),
	"{{ProbeGranted}}", strconv.Itoa(ProbeGranted),
	"{{ProbeWaiting}}", strconv.Itoa(ProbeWaiting),
	"{{ProbeHeld}}", strconv.Itoa(ProbeHeld),
	"{{OrderConflictReply}}", OrderConflictReply,
	"{{OrderNone}}", OrderNone,
	"{{OrderOnFinal}}", OrderOnFinal,
	"{{ClaimCreated}}", strconv.Itoa(ClaimCreated),
	"{{ClaimConflict}}", strconv.Itoa(ClaimConflict),
	"{{ClaimWaiting}}", strconv.Itoa(ClaimWaiting),
	"{{ReplayOff}}", ReplayOff,
	"{{ReplayPrune}}", ReplayPrune,
	"{{HourlySlots}}", strconv.Itoa(HourlySlots),
	"{{HourlyTTLMs}}", strconv.FormatInt(HourlyTTL.Milliseconds(), 10),
	"{{RedeliverUnchanged}}", strconv.Itoa(RedeliverUnchanged),
	"{{RedeliverReset}}", strconv.Itoa(RedeliverReset),
	"{{RedeliverExpired}}", strconv.Itoa(RedeliverExpired),
	"{{RedeliverWaiting}}", strconv.Itoa(RedeliverWaiting),
	"{{RetryGone}}", strconv.Itoa(RetryGone),
	"{{RetryNotPending}}", strconv.Itoa(RetryNotPending),
	"{{RetryInFlight}}", strconv.Itoa(RetryInFlight),
	"{{RetryNotQueued}}", strconv.Itoa(RetryNotQueued),
	"{{RetryDue}}", strconv.Itoa(RetryDue),
	"{{LeaseNotDue}}", strconv.Itoa(LeaseNotDue),
	"{{LeaseExpired}}", strconv.Itoa(LeaseExpired),
	"{{LeaseNotRecord}}", strconv.Itoa(LeaseNotRecord),
	"{{UnscheduleLeaseLost}}", strconv.Itoa(UnscheduleLeaseLost),
	"{{UnscheduleDone}}", strconv.Itoa(UnscheduleDone),
	"{{SaveConflict}}", strconv.Itoa(SaveConflict),
	"{{SaveDone}}", strconv.Itoa(SaveDone),
	"{{SaveOverQuota}}", strconv.Itoa(SaveOverQuota),
	"{{SaveOverSize}}", strconv.Itoa(SaveOverSize),
)

// Source returns the text of script name (a file of lua/ without its extension) as Redis runs it.
func Source(name string) (string, error) { return source(files, name) }

// source is Source on the files of fsys.
func source(fsys fs.FS, name string) (string, error) {
	src, err := expand(fsys, "lua/"+name+".lua", map[string]bool{})
	if err != nil {
		return "", err
	}
	src = Placeholders.Replace(src)
	if m := leftover.FindString(src); m != "" {
		return "", fmt.Errorf("rdb: script %s: unknown placeholder %s", name, m)
	}
	return src, nil
}

// leftover finds a placeholder Placeholders does not know.
var leftover = regexp.MustCompile(`\{\{\w*\}\}`)

// expand reads a file of lua/ and replaces its include lines, each library once (seen).
func expand(fsys fs.FS, path string, seen map[string]bool) (string, error) {
	b, err := fs.ReadFile(fsys, path)
	if err != nil {
		return "", fmt.Errorf("rdb: %w", err)
	}
	var out strings.Builder
	for line := range strings.Lines(string(b)) {
		lib, ok := strings.CutPrefix(strings.TrimSpace(line), "--#include ")
		if !ok {
			out.WriteString(line)
			continue
		}
		lib = strings.TrimSpace(lib)
		if seen[lib] {
			continue
		}
		seen[lib] = true
		text, err := expand(fsys, "lua/lib/"+lib+".lua", seen)
		if err != nil {
			return "", err
		}
		out.WriteString(text)
	}
	return out.String(), nil
}

// load is the script of Source(name); the files are embedded, so an error is a mistake in this
// package, which every test of it and of its users finds at once.
func load(name string) *redis.Script {
	src, err := Source(name)
	if err != nil {
		panic(err)
	}
	return redis.NewScript(src)
}
