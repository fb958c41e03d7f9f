package pgxoutbox_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// relayProcess is one relay child process (runRelayChild), restarted after each kill.
type relayProcess struct {
	t          testing.TB
	env        []string
	mu         sync.Mutex
	cmd        *exec.Cmd
	exited     chan struct{}
	duplicates *atomic.Int64 // duplicates its passes reported, across its lives
	passes     *atomic.Int64
}

// start runs a new life of the process.
func (p *relayProcess) start() {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(p.t, err)
	require.NoError(p.t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var line struct {
				Msg        string `json:"msg"`
				Duplicates int64  `json:"duplicates"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "pgxoutbox: pass" {
				p.duplicates.Add(line.Duplicates)
				p.passes.Add(1)
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
}

// kill sends SIGKILL to the current life, by its pid, and waits for it to end.
func (p *relayProcess) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = cmd.Process.Kill()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		p.t.Errorf("relay pid %d did not end after SIGKILL", cmd.Process.Pid)
	}
}

// TestRelayCrashSafety: three relay processes run while producers commit events (1,500; 10,000 with
// WEBHOOKS_SOAK=1; up to 3× that until a kill has cost a duplicate), some ordered, and one of the relays is SIGKILLed, mid-pass (each Redis command
// of theirs is slowed, so their passes are long), every 100–300ms and restarted. Every event is
// delivered once per webhook, each key's events in commit order, no row is left, and the relays
// reported duplicates: a killed pass's rows that Enqueue had accepted were relayed again and the
// claim made them duplicates. Broken by deleting each row before its Enqueue (events are lost: the
// drain waits in vain), or by committing each row's deletion before the pass ends (the same).
func TestRelayCrashSafety(t *testing.T) {
	events := 1500
	if os.Getenv("WEBHOOKS_SOAK") == "1" {
		events = 10000
	}
	f := newFixture(t, pgxoutbox.Options{})
	var dups, passes atomic.Int64
	relays := make([]*relayProcess, 3)
	for i := range relays {
		relays[i] = &relayProcess{t: t, duplicates: &dups, passes: &passes, env: []string{relayChildEnv + "=1",
			"PGXOUTBOX_CHILD_PG=" + pgURL(t), "PGXOUTBOX_CHILD_TABLE=" + f.table, "PGXOUTBOX_CHILD_REDIS=" + f.tr.addr,
			"PGXOUTBOX_CHILD_PREFIX=" + f.tr.prefix, "PGXOUTBOX_CHILD_DELAY=1ms", "PGXOUTBOX_CHILD_BATCH=50"}}
		relays[i].start()
		t.Cleanup(relays[i].kill)
	}

	// Producers: 4, each committing its share in transactions of 1–3 events; events of 16 keys are
	// ordered, each key produced by one producer, one transaction after another.
	const producers, keys, minProducing = 4, 16, 4 * time.Second
	var produced atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for p := range producers {
		wg.Go(func() {
			seq := map[string]int{}
			// Past events (up to 3×) while no kill has yet landed in a pass's window: the test proves
			// nothing until one has.
			more := func(n int) bool { return n < events || (dups.Load() == 0 && n < 3*events) }
			for n := p; more(n); {
				var batch []webhooks.Event
				for range 1 + rand.IntN(3) {
					if !more(n) {
						break
					}
					evt := webhooks.Event{Type: "order.updated", ID: fmt.Sprintf("crash-%d", n)}
					if n%3 == 0 {
						key := fmt.Sprintf("key-%d", (n/3)%keys/producers*producers+p)
						evt.OrderKey, evt.Data = key, payload{Key: key, Seq: seq[key]}
						seq[key]++
					}
					batch = append(batch, evt)
					n += producers
				}
				f.commit(t, batch...)
				produced.Add(int64(len(batch)))
				// Paced to take minProducing at least, so that the relays are killed often enough (1,500
				// events once took 1.2s: 5 kills, none of them mid-pass after an Enqueue).
				time.Sleep(time.Until(start.Add(time.Duration(n) * minProducing / time.Duration(events))))
			}
		})
	}
	producing := make(chan struct{})
	go func() { wg.Wait(); close(producing) }()

	kills := 0
	for done := false; !done; {
		select {
		case <-producing:
			done = true
		case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
			p := relays[rand.IntN(len(relays))]
			p.kill()
			kills++
			p.start()
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("producers did not finish within 3 minutes (%d of %d events)", produced.Load(), events)
		}
	}
	total := int(produced.Load())
	t.Logf("%d events committed in %s, %d relay kills", total, time.Since(start).Round(time.Millisecond), kills)

	for _, c := range []*counter{f.a, f.b} {
		eventually(t, time.Minute, func() bool { n, _ := c.distinct(); return n == total }, "every event delivered")
		assert.Empty(t, c.repeated(), "each event delivered once")
		for k, got := range c.keyOrder() {
			for i, s := range got {
				if !assert.Equal(t, i, s, "key %s in commit order: %v", k, got) {
					break
				}
			}
		}
	}
	f.drained(t, 30*time.Second)
	t.Logf("%d relay passes, %d duplicates (rows relayed again after a kill)", passes.Load(), dups.Load())
	assert.GreaterOrEqual(t, kills, 3, "relays were killed")
	assert.Positive(t, dups.Load(), "some kill landed after Enqueue and before the pass committed")
}
