package webhooks

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The schema comment of internal/rdb/schema.go is the truth about keys: TestSchemaListsEveryKey
// reads it at test time, runs a workload that touches every feature under its own prefix, and fails on
// a key no line lists (or of another type), and on a line that no key of the workload matches.

// schemaLine is one key pattern of the schema comment.
type schemaLine struct {
	line    int    // in internal/rdb/schema.go
	pattern string // as written, e.g. {P:s}:rec:<h>
	typ     string // the Redis TYPE the line gives
	re      *regexp.Regexp
}

// schemaRow is a line of the schema table: a tab, a key pattern, its type (continuation lines start
// with spaces after the tab).
var schemaRow = regexp.MustCompile(`^//\t(\S+)\s+(\S+)`)

// redisTypes are the types a schema line may name.
var redisTypes = []string{"string", "hash", "zset", "stream", "set", "list"}

// parseSchema reads the key patterns of the schema comment: the first comment block after the package
// clause of src. A pattern is made a regexp for prefix: {P:s} is a shard's hash tag ({P:t<n>}), P elsewhere the prefix, <name> one or more bytes, <name?> zero or more, the rest literal.
func parseSchema(src, prefix string) ([]schemaLine, error) {
	var out []schemaLine
	sc := bufio.NewScanner(strings.NewReader(src))
	inBlock, n := false, 0
	for sc.Scan() {
		n++
		text := sc.Text()
		if !strings.HasPrefix(text, "//") {
			if inBlock {
				break
			}
			continue
		}
		inBlock = true
		m := schemaRow.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		if !slices.Contains(redisTypes, m[2]) {
			return nil, fmt.Errorf("line %d: key %s has type %q, not one of %v", n, m[1], m[2], redisTypes)
		}
		out = append(out, schemaLine{line: n, pattern: m[1], typ: m[2], re: patternRegexp(m[1], prefix)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no key pattern found in the schema comment")
	}
	return out, sc.Err()
}

// patternRegexp turns a schema pattern into an anchored regexp of the keys of prefix.
func patternRegexp(pattern, prefix string) *regexp.Regexp {
	p := regexp.QuoteMeta(prefix)
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for rest := pattern; rest != ""; {
		switch {
		case strings.HasPrefix(rest, "{P:s}"):
			b.WriteString(`\{` + p + `:t[0-9]+\}`)
			rest = rest[len("{P:s}"):]
		case strings.HasPrefix(rest, "{P:"):
			b.WriteString(`\{` + p + `:`)
			rest = rest[len("{P:"):]
		case rest[0] == '<' && strings.IndexByte(rest, '>') > 0:
			end := strings.IndexByte(rest, '>')
			if rest[end-1] == '?' {
				b.WriteString(`.*`)
			} else {
				b.WriteString(`.+`)
			}
			rest = rest[end+1:]
		default:
			b.WriteString(regexp.QuoteMeta(rest[:1]))
			rest = rest[1:]
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// schemaProblems compares the keys seen (key -> TYPE) with the schema: unlisted are the keys no line
// matches with its type, unwritten the lines no key matched.
func schemaProblems(schema []schemaLine, seen map[string]string) (unlisted, unwritten []string) {
	matched := make([]int, len(schema))
	for key, typ := range seen {
		found := false
		for i, l := range schema {
			if l.re.MatchString(key) && l.typ == typ {
				matched[i]++
				found = true
			}
		}
		if !found {
			unlisted = append(unlisted, fmt.Sprintf("%q (%s)", key, typ))
		}
	}
	for i, l := range schema {
		if matched[i] == 0 {
			unwritten = append(unwritten, fmt.Sprintf("line %d: %s (%s)", l.line, l.pattern, l.typ))
		}
	}
	slices.Sort(unlisted)
	return unlisted, unwritten
}

// keyWatch collects every key of a prefix, with its type, over the scans of a workload.
type keyWatch struct {
	rdb    redis.UniversalClient
	prefix string
	mu     sync.Mutex
	seen   map[string]string // key -> TYPE
}

// scan SCANs every master for the keys holding the prefix anywhere (a key without the {P: form is
// caught too) and records them with their types.
func (kw *keyWatch) scan(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "*"+kw.prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			typ, err := c.Type(ctx, iter.Val()).Result()
			if err != nil {
				return err
			}
			if typ == "none" { // gone since the SCAN
				continue
			}
			kw.mu.Lock()
			kw.seen[iter.Val()] = typ
			kw.mu.Unlock()
		}
		return iter.Err()
	}
	switch c := kw.rdb.(type) {
	case *redis.ClusterClient:
		require.NoError(t, c.ForEachMaster(ctx, node))
	case *redis.Client:
		require.NoError(t, node(ctx, c))
	default:
		t.Fatalf("unexpected client %T", kw.rdb)
	}
}

func TestSchemaListsEveryKey(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	src, err := os.ReadFile("internal/rdb/schema.go")
	require.NoError(t, err)
	schema, err := parseSchema(string(src), tr.prefix)
	require.NoError(t, err)

	kw := &keyWatch{rdb: tr.rdb, prefix: tr.prefix, seen: map[string]string{}}
	runSchemaWorkload(t, tr, kw)

	unlisted, unwritten := schemaProblems(schema, kw.seen)
	assert.Empty(t, unlisted, "keys the schema comment of internal/rdb/schema.go does not list (with their type)")
	assert.Empty(t, unwritten, "schema lines no key of the workload matched: a key gone, or a feature the workload misses")
	t.Logf("%d keys seen, %d schema lines", len(kw.seen), len(schema))

	// Every key the workload left that grows with the events has a TTL (guarantee 3).
	var noTTL []string
	for _, k := range tr.keys(t) {
		if ttl, err := tr.rdb.PTTL(context.Background(), k).Result(); err == nil && ttl == -time.Nanosecond && !keyWithoutTTLAllowed(k) {
			noTTL = append(noTTL, k)
		}
	}
	assert.Empty(t, noTTL, "keys without a TTL that are not the registry's or the schedule's")
}

// TestSchemaParse checks the parser on a schema of its own: a key whose line is removed is reported,
// and so is a line no key matches.
func TestSchemaParse(t *testing.T) {
	t.Parallel()
	src := "package x\n\n// Schema.\n//\n" +
		"//\t{P:s}:rec:<h>              string  the record\n" +
		"//\t                                   continued\n" +
		"//\t{P:registry}:t:<t>:all     hash    tenant index\n" +
		"//\t{P:rate:<webhook_id>}      string  limiter\n" +
		"//\t{P:tests:<t?>}:w:<id>     string  maybe empty\n" +
		"\n//\t{P:s}:not-in-block  string  after the block\n"
	schema, err := parseSchema(src, "pre")
	require.NoError(t, err)
	require.Len(t, schema, 4)
	assert.Equal(t, schemaLine{line: 5, pattern: "{P:s}:rec:<h>", typ: "string"}, schemaLine{line: schema[0].line, pattern: schema[0].pattern, typ: schema[0].typ})

	tests := []struct {
		key, typ string
		unlisted bool
	}{
		{"{pre:t12}:rec:0a1b", "string", false},
		{"{pre:7}:rec:0a1b", "string", true}, // not a shard tag of this version
		{"{pre:t12}:rec:0a1b", "hash", true}, // wrong type
		{"{pre:t12}:recx:0a1b", "string", true},
		{"{other:t12}:rec:0a1b", "string", true},
		{"{pre:t12}:rec:", "string", true},
		{"{pre:registry}:t:acme:all", "hash", false},
		{"{pre:registry}:t:acme:sub:x", "hash", true},
		{"{pre:rate:wh_1}", "string", false},
		{"{pre:rate:wh_1}:x", "string", true},
		{"{pre:t3}:not-in-block", "string", true},
		{"{pre:tests:}:w:wh_1", "string", false}, // <t?> may be empty
		{"{pre:tests:acme}:w:wh_1", "string", false},
		{"{pre:tests:acme}:w:", "string", true}, // <id> may not
	}
	for _, tc := range tests {
		t.Run(tc.key+"_"+tc.typ, func(t *testing.T) {
			unlisted, _ := schemaProblems(schema, map[string]string{tc.key: tc.typ})
			assert.Equal(t, tc.unlisted, len(unlisted) == 1, "unlisted: %v", unlisted)
		})
	}
	_, unwritten := schemaProblems(schema, map[string]string{"{pre:t1}:rec:a": "string"})
	assert.Equal(t, []string{"line 7: {P:registry}:t:<t>:all (hash)", "line 8: {P:rate:<webhook_id>} (string)",
		"line 9: {P:tests:<t?>}:w:<id> (string)"}, unwritten)

	_, err = parseSchema("package x\n\n//\t{P:s}:x  strin  typo\n", "pre")
	assert.ErrorContains(t, err, "type \"strin\"")
	_, err = parseSchema("package x\n\n// nothing\n", "pre")
	assert.Error(t, err)
}
