package natsdest_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// cpuUse is the CPU time (user and system) used so far by the three processes a delivery to NATS
// costs: this one (the Dispatcher, its worker and the benchmark's callers), redis-server and
// nats-server. A figure that cannot be read (miniredis is in this process; nats-server not found in
// /proc) is -1.
type cpuUse struct{ process, redis, broker time.Duration }

// readCPU reads the three clocks; brokerPID is nats-server's pid (0: unknown).
func readCPU(ctx context.Context, rdb redis.UniversalClient, brokerPID int) cpuUse {
	u := cpuUse{process: -1, redis: -1, broker: -1}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.process = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if info, err := rdb.Info(ctx, "cpu").Result(); err == nil {
		var s float64
		var n int
		for line := range strings.Lines(info) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			if f, err := strconv.ParseFloat(v, 64); err == nil && (k == "used_cpu_user" || k == "used_cpu_sys") {
				s, n = s+f, n+1
			}
		}
		if n == 2 {
			u.redis = time.Duration(s * float64(time.Second))
		}
	}
	if brokerPID > 0 {
		// /proc/<pid>/stat: utime and stime, the 14th and 15th fields, in clock ticks (100 per second
		// on Linux: USER_HZ, which the kernel fixes at 100 whatever its tick rate), counted after the
		// command's closing parenthesis: the last ") ", as a command name may hold one.
		if raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(brokerPID), "stat")); err == nil {
			if i := strings.LastIndex(string(raw), ") "); i >= 0 {
				f := strings.Fields(string(raw)[i+2:])
				if len(f) > 12 {
					ut, err1 := strconv.ParseInt(f[11], 10, 64)
					st, err2 := strconv.ParseInt(f[12], 10, 64)
					if err1 == nil && err2 == nil {
						u.broker = time.Duration(ut+st) * (time.Second / 100)
					}
				}
			}
		}
	}
	return u
}

// since is the CPU used from start to u, per message (µs), each -1 where either reading is missing.
func (u cpuUse) since(start cpuUse, messages int) [3]float64 {
	per := func(a, b time.Duration) float64 {
		if a < 0 || b < 0 {
			return -1
		}
		return float64(a-b) / float64(time.Microsecond) / float64(messages)
	}
	return [3]float64{per(u.process, start.process), per(u.redis, start.redis), per(u.broker, start.broker)}
}

// natsServerPID is the pid of the machine's nats-server, found by its command name in /proc (0: none
// found, or not Linux). It is only read, never signalled.
func natsServerPID() int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if comm, err := os.ReadFile(filepath.Join(d, "comm")); err == nil && strings.TrimSpace(string(comm)) == "nats-server" {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	return 0
}
