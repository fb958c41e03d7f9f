// Package config is webhooksd's configuration: every setting is a flag with an environment variable
// (the flag wins), each parsed and checked at start, so that a bad value stops the server before it
// does anything, with a message naming the flag and what to change (Parse returns a *UsageError, and
// main exits 2 with it).
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/smartdrop/webhooks"
)

// Config is what webhooksd runs with.
type Config struct {
	// RedisURL is -redis: redis:// or rediss://; "" with no RedisCluster runs on embedded miniredis.
	RedisURL string
	// RedisCluster is -redis-cluster: the seed nodes of a Redis Cluster, host:port each.
	RedisCluster []string
	// RedisClusterURL is -redis-cluster given as a URL (credentials, TLS): RedisCluster holds its nodes.
	RedisClusterURL string
	// Listen is -listen: the address the HTTP server listens on.
	Listen string
	// APIKeys are -api-key: the operator's keys (admin API, UI, ingest, portal tokens).
	APIKeys []string
	// IngestKeys are -ingest-key: keys that may only send events (POST /v1/events).
	IngestKeys []string
	// GeneratedKey is set when no -api-key was given in miniredis mode: APIKeys holds this one key,
	// made for this run, which the server logs once.
	GeneratedKey bool
	// Destinations are -destinations: the names of the destination kinds turned on (http is always).
	Destinations []string
	// LogLevel is -log-level.
	LogLevel slog.Level
	// Options are the library's options the flags set (Logger, Hooks and Destinations are the
	// server's to fill).
	Options webhooks.Options
}

// Embedded reports whether the server runs on an embedded miniredis: nothing survives a restart.
func (c Config) Embedded() bool { return c.RedisURL == "" && len(c.RedisCluster) == 0 }

// UsageError is a bad setting: Parse's error for it names the flag, its environment variable, the
// value and what to change. main prints it and exits 2.
type UsageError struct {
	Flag, Env, Value string
	Problem          string
}

func (e *UsageError) Error() string {
	if e.Flag == "" {
		return "webhooksd: " + e.Problem
	}
	where := "-" + e.Flag + " (" + e.Env + ")"
	if e.Value != "" {
		where += fmt.Sprintf(" = %q", e.Value)
	}
	return "webhooksd: " + where + ": " + e.Problem
}

// ErrHelp is Parse's error for -h or -help: the usage was written; exit 0.
var ErrHelp = flag.ErrHelp

// Parse reads the flags in args and the environment through getenv (a flag given wins over its
// variable; an empty variable counts as unset). destinations are the names of the destination kinds
// this binary is built with (-destinations may name only those). Usage and flag syntax errors go to
// out. The options are checked by the library itself (webhooks.New, which does no I/O), and an error
// there is given back naming the flag that sets the option.
func Parse(args []string, getenv func(string) string, out io.Writer, destinations []string) (Config, error) {
	fs := flag.NewFlagSet("webhooksd", flag.ContinueOnError)
	fs.SetOutput(out)
	raws := make(map[string]*rawValue, len(settings))
	for _, s := range settings {
		v := &rawValue{boolean: s.boolean}
		raws[s.flag] = v
		fs.Var(v, s.flag, s.usage+" (env "+s.env+")")
	}
	fs.Usage = func() { usage(out, destinations) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, ErrHelp
		}
		return Config{}, &UsageError{Problem: err.Error() + " (run webhooksd -help for the flags)"}
	}
	if fs.NArg() > 0 {
		return Config{}, &UsageError{Problem: fmt.Sprintf("unexpected argument %q: every setting is a flag (run webhooksd -help)", fs.Arg(0))}
	}
	cfg := Config{Listen: "127.0.0.1:8080", Destinations: []string{"http"}, LogLevel: slog.LevelInfo}
	for _, s := range settings {
		value, given := raws[s.flag].value, raws[s.flag].set
		if !given {
			value = strings.TrimSpace(getenv(s.env))
		}
		if value == "" {
			continue
		}
		if err := s.parse(&cfg, value); err != nil {
			return Config{}, &UsageError{Flag: s.flag, Env: s.env, Value: shown(s, value), Problem: err.Error()}
		}
	}
	if err := cfg.check(destinations); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// shown is a value as an error may show it: never a secret.
func shown(s setting, value string) string {
	if s.secret {
		return ""
	}
	return value
}

// check checks what no single flag can: the settings together, and the options as the library sees
// them.
func (c *Config) check(destinations []string) error {
	if c.RedisURL != "" && len(c.RedisCluster) > 0 {
		return &UsageError{Flag: "redis", Env: "WEBHOOKS_REDIS_URL",
			Problem: "set either -redis (one Redis) or -redis-cluster (a Redis Cluster), not both"}
	}
	for _, name := range c.Destinations {
		if !slices.Contains(destinations, name) {
			return &UsageError{Flag: "destinations", Env: "WEBHOOKS_DESTINATIONS", Value: strings.Join(c.Destinations, ","),
				Problem: fmt.Sprintf("this webhooksd is built with the destinations %s; %q is not one of them",
					strings.Join(destinations, ", "), name)}
		}
	}
	if len(c.APIKeys) == 0 {
		if !c.Embedded() {
			return &UsageError{Flag: "api-key", Env: "WEBHOOKS_API_KEY",
				Problem: "an operator key is required with a Redis: set one or more keys of at least " +
					fmt.Sprint(MinKeyLen) + " characters, comma-separated (clients send one as Authorization: Bearer <key>)"}
		}
		c.APIKeys, c.GeneratedKey = []string{newKey()}, true
	}
	return checkOptions(c.Options)
}

// checkOptions has the library check the options (New does no I/O) and names the flag of the option
// an error is about.
func checkOptions(o webhooks.Options) error {
	_, err := webhooks.New(unusedRedis, o)
	if err == nil {
		return nil
	}
	msg := flagWords(strings.TrimPrefix(err.Error(), "webhooks: invalid options: "))
	if s, ok := settingOf(err); ok {
		return &UsageError{Flag: s.flag, Env: s.env, Problem: msg}
	}
	return &UsageError{Problem: msg}
}

// flagWords rewrites a library message about options in the flags' words: each Options field named
// becomes its flag.
func flagWords(msg string) string {
	msg = strings.ReplaceAll(msg, "Options.MinRetention()", "the shortest retention these settings allow")
	msg = strings.ReplaceAll(msg, "MinRetention(", "the retry horizon(")
	for _, s := range settings {
		if s.option == "" {
			continue
		}
		for i := wordIndex(msg, s.option); i >= 0; i = wordIndex(msg, s.option) {
			msg = msg[:i] + "-" + s.flag + msg[i+len(s.option):]
		}
	}
	return msg
}

// settingOf is the setting of the Options field an error of webhooks.New names first.
func settingOf(err error) (setting, bool) {
	msg := err.Error()
	best, found := len(msg), setting{}
	for _, s := range settings {
		if s.option == "" {
			continue
		}
		if i := wordIndex(msg, s.option); i >= 0 && i < best {
			best, found = i, s
		}
	}
	return found, found.flag != ""
}

// wordIndex is the index of word in s where it stands as a whole word, or -1.
func wordIndex(s, word string) int {
	for from := 0; ; {
		i := strings.Index(s[from:], word)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(word)
		before := i == 0 || !isWordByte(s[i-1])
		after := end == len(s) || !isWordByte(s[end])
		if before && after {
			return i
		}
		from = i + 1
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// rawValue is a flag's text as given (a boolean flag may be given alone: -require-https).
type rawValue struct {
	value   string
	set     bool
	boolean bool
}

func (v *rawValue) String() string   { return v.value }
func (v *rawValue) IsBoolFlag() bool { return v.boolean }
func (v *rawValue) Set(s string) error {
	v.value, v.set = strings.TrimSpace(s), true // given empty: unset, whatever the environment says
	return nil
}

// usage writes the flags, each with its variable, default and meaning.
func usage(out io.Writer, destinations []string) {
	fmt.Fprintf(out, "webhooksd: the webhooks server (HTTP ingest, admin API and UI, portal, worker) on Redis.\n\n"+
		"Usage: webhooksd [flags]   (each flag may be set by its environment variable instead; a flag wins)\n"+
		"Built with the destinations: %s\n\n", strings.Join(destinations, ", "))
	for _, s := range settings {
		fmt.Fprintf(out, "  -%s  (%s)\n      %s\n", s.flag, s.env, s.usage)
	}
}

// parseList splits a comma-separated list, dropping empty items.
func parseList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseDuration is time.ParseDuration that also takes whole days first: 7d, 1d12h.
func parseDuration(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		var n int
		if _, err := fmt.Sscanf(s[:i], "%d", &n); err != nil || fmt.Sprint(n) != s[:i] || n < 0 || n > 100000 {
			return 0, fmt.Errorf("not a duration: give one like 15s, 2m, 36h or 7d")
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("not a duration: give one like 15s, 2m, 36h or 7d")
	}
	return days + d, nil
}

// parsePrefixes parses comma-separated CIDR prefixes.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range parseList(s) {
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, fmt.Errorf("%q is not a network prefix: give ranges like 10.1.0.0/16 or fd00::/8, comma-separated", item)
		}
		out = append(out, p)
	}
	return out, nil
}
