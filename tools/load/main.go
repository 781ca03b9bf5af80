// Command podsizer-load uses CPU and memory the way its arguments say, so the real node's containers show
// a known usage in cAdvisor's series: a steady level, a daily-like cycle compressed into minutes, bursts,
// or a memory leak up to a ceiling (above the container's limit the kernel OOM-kills it).
//
//	podsizer-load --profile=steady --cpu=300m --memory=200Mi
//	podsizer-load --profile=cycle --cpu=400m --cpu-low=100m --memory=300Mi --memory-low=100Mi --period=10m
//	podsizer-load --profile=bursts --cpu=800m --cpu-low=50m --burst=30s --period=3m --memory=64Mi
//	podsizer-load --profile=leak --cpu=50m --memory=32Mi --leak=4Mi/s --max-memory=1Gi
//
// CPU is burnt against the process's own CPU time (getrusage), not the wall clock, so the average holds on a
// busy machine; a burner starved for longer than maxDebt catches up only that much (catching up on all of it
// would be a burst above the level). Memory is held as touched anonymous pages, so it is working set, not
// only virtual size.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const version = "0.1.0"

// profile is what the arguments ask for; level() gives the CPU (cores) and memory (bytes) wanted at t.
type profile struct {
	kind                string
	cpu, cpuLow         float64
	memory, memoryLow   float64
	maxMemory, leakRate float64
	period, burst       time.Duration
}

func (p profile) level(t time.Duration) (cpu, memory float64) {
	switch p.kind {
	case "cycle": // low at t=0, high at half the period: a day in `period`
		phase := 0.5 * (1 - math.Cos(2*math.Pi*t.Seconds()/p.period.Seconds()))
		return p.cpuLow + (p.cpu-p.cpuLow)*phase, p.memoryLow + (p.memory-p.memoryLow)*phase
	case "bursts": // `burst` at cpu at the end of every period, cpuLow otherwise
		if t%p.period >= p.period-p.burst {
			return p.cpu, p.memory
		}
		return p.cpuLow, p.memory
	case "leak":
		return p.cpu, math.Min(p.maxMemory, p.memory+p.leakRate*t.Seconds())
	default:
		return p.cpu, p.memory
	}
}

// parseCPU reads "300m" or "1.5" (cores).
func parseCPU(s string) (float64, error) {
	if strings.HasSuffix(s, "m") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(s, "m"), 64)
		return v / 1000, err
	}
	return strconv.ParseFloat(s, 64)
}

// parseBytes reads "200Mi", "1Gi", "512Ki" or a plain number of bytes; "4Mi/s" for a rate.
func parseBytes(s string) (float64, error) {
	s = strings.TrimSuffix(s, "/s")
	for suffix, scale := range map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if strings.HasSuffix(s, suffix) {
			v, err := strconv.ParseFloat(strings.TrimSuffix(s, suffix), 64)
			return v * scale, err
		}
	}
	return strconv.ParseFloat(s, 64)
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// maxDebt is the most wall time at the wanted level a starved burner makes up for.
const maxDebt = 500 * time.Millisecond

// burner keeps the process's CPU time at the integral of the wanted level: spin while behind, sleep ahead;
// what it is owed beyond maxDebt at the level is forgiven.
func burner(wanted func() float64, share float64) {
	start, used := time.Now(), cpuSeconds()
	owed := 0.0
	last := start
	for {
		now := time.Now()
		level := wanted() * share
		owed += level * now.Sub(last).Seconds()
		last = now
		spent := cpuSeconds() - used
		if limit := level * maxDebt.Seconds(); owed-spent > limit {
			owed = spent + limit
		}
		if spent >= owed {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		until := time.Now().Add(5 * time.Millisecond)
		x := 1.0
		for time.Now().Before(until) {
			x = math.Sqrt(x + 1.000001)
		}
		_ = x
	}
}

const chunk = 1 << 20 // memory is held in 1 MiB chunks, every page written

type holder struct{ chunks [][]byte }

func (h *holder) resize(bytes float64) {
	want := int(bytes / chunk)
	for len(h.chunks) < want {
		b := make([]byte, chunk)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		h.chunks = append(h.chunks, b)
	}
	if len(h.chunks) > want {
		for i := want; i < len(h.chunks); i++ {
			h.chunks[i] = nil
		}
		h.chunks = h.chunks[:want]
		debug.FreeOSMemory() // hand the pages back, so the working set falls too
	}
}

func main() {
	var (
		kind              = flag.String("profile", "steady", "steady | cycle | bursts | leak")
		cpu, cpuLow       = flag.String("cpu", "300m", "CPU (cores or millicores): the level, the high of a cycle or burst"), flag.String("cpu-low", "0", "CPU at the low of a cycle, between bursts")
		memory, memoryLow = flag.String("memory", "200Mi", "memory held: the level, the high of a cycle, the start of a leak"), flag.String("memory-low", "0", "memory at the low of a cycle")
		maxMemory, leak   = flag.String("max-memory", "1Gi", "where a leak stops growing"), flag.String("leak", "1Mi/s", "how fast a leak grows")
		period            = flag.Duration("period", 10*time.Minute, "length of one cycle, or of a burst period")
		burst             = flag.Duration("burst", 30*time.Second, "length of a burst")
		report            = flag.Duration("report", 10*time.Second, "how often to print what is used")
		showVersion       = flag.Bool("version", false, "print the version and exit")
	)
	flag.Parse()
	if *showVersion {
		fmt.Printf("podsizer-load %s\n", version)
		return
	}
	p := profile{kind: *kind, period: *period, burst: *burst}
	var err error
	for _, f := range []struct {
		dst   *float64
		src   string
		parse func(string) (float64, error)
	}{
		{&p.cpu, *cpu, parseCPU}, {&p.cpuLow, *cpuLow, parseCPU}, {&p.memory, *memory, parseBytes},
		{&p.memoryLow, *memoryLow, parseBytes}, {&p.maxMemory, *maxMemory, parseBytes}, {&p.leakRate, *leak, parseBytes},
	} {
		if *f.dst, err = f.parse(f.src); err != nil || *f.dst < 0 {
			fmt.Fprintf(os.Stderr, "podsizer-load: bad value %q\n", f.src)
			os.Exit(2)
		}
	}
	switch p.kind {
	case "steady", "cycle", "bursts", "leak":
	default:
		fmt.Fprintf(os.Stderr, "podsizer-load: unknown profile %q\n", p.kind)
		os.Exit(2)
	}
	if p.period <= 0 || p.burst < 0 || p.burst > p.period {
		fmt.Fprintln(os.Stderr, "podsizer-load: --period must be positive and --burst within it")
		os.Exit(2)
	}

	start := time.Now()
	wantedCPU := func() float64 { c, _ := p.level(time.Since(start)); return c }
	workers := int(math.Max(1, math.Ceil(math.Max(p.cpu, p.cpuLow))))
	runtime.GOMAXPROCS(workers + 1)
	for i := 0; i < workers; i++ {
		go burner(wantedCPU, 1/float64(workers))
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var h holder
	tick := time.NewTicker(time.Second)
	lastReport := time.Time{}
	fmt.Printf("podsizer-load %s: profile %s, cpu %.3f (low %.3f) cores, memory %.0f (low %.0f, max %.0f) bytes\n",
		version, p.kind, p.cpu, p.cpuLow, p.memory, p.memoryLow, p.maxMemory)
	for {
		select {
		case <-stop:
			fmt.Println("podsizer-load: stopping")
			return
		case now := <-tick.C:
			c, m := p.level(now.Sub(start))
			h.resize(m)
			if now.Sub(lastReport) >= *report {
				lastReport = now
				elapsed := now.Sub(start).Seconds()
				fmt.Printf("t=%.0fs cpu wanted %.3f, average so far %.3f; memory held %d MiB\n",
					elapsed, c, cpuSeconds()/elapsed, len(h.chunks))
			}
		}
	}
}
