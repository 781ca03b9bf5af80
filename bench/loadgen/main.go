// Command podsizer-loadgen offers a constant request rate (open loop) over HTTP/1.1 keep-alive
// connections and prints the latency distribution as JSON.
//
// Request i is due at start + i/rate whether or not earlier requests have finished; its latency runs
// from that due time to the end of the response body, so time spent waiting for a free connection
// (queueing) is included and a slow server cannot hide behind a slowed-down client (no coordinated
// omission).
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

type result struct {
	URL          string         `json:"url"`
	OfferedRPS   float64        `json:"offered_rps"`
	DurationS    float64        `json:"duration_s"`
	WarmupS      float64        `json:"warmup_s"`
	Conns        int            `json:"conns"`
	Bodies       int            `json:"bodies"`
	BodyBytesMin int            `json:"body_bytes_min"`
	BodyBytesMax int            `json:"body_bytes_max"`
	Scheduled    int            `json:"scheduled"`
	Sent         int            `json:"sent"`
	OK           int            `json:"ok"`
	Errors       int            `json:"errors"`
	Unsent       int            `json:"unsent"`
	WarmupDone   int            `json:"warmup_completed"`
	ElapsedS     float64        `json:"elapsed_s"`
	AchievedRPS  float64        `json:"achieved_rps"`
	WindowS      float64        `json:"window_s"`
	P50          float64        `json:"p50_ms"`
	P90          float64        `json:"p90_ms"`
	P99          float64        `json:"p99_ms"`
	P999         float64        `json:"p999_ms"`
	Max          float64        `json:"max_ms"`
	Mean         float64        `json:"mean_ms"`
	Status       map[string]int `json:"status"`
	ErrorSamples []string       `json:"error_samples,omitempty"`
	GoMaxProcs   int            `json:"gomaxprocs"`
}

type outcome struct {
	measured bool
	latency  time.Duration
	done     time.Time
	status   int
	err      error
}

func loadBodies(path string) ([][]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		files = files[:0]
		for _, e := range entries {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		sort.Strings(files)
	}
	var bodies [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	if len(bodies) == 0 {
		return nil, fmt.Errorf("no request bodies in %s", path)
	}
	return bodies, nil
}

func newClient(cacert string, conns int, timeout time.Duration) (*http.Client, error) {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if cacert != "" {
		pem, err := os.ReadFile(cacert)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-cacert %s: no PEM certificates found", cacert)
		}
		tlsConf.RootCAs = pool
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsConf,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: timeout}, nil
}

func pct(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return ms(sorted[i])
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func nanOrNum(x float64) float64 {
	if math.IsNaN(x) {
		return -1
	}
	return x
}

func main() {
	url := flag.String("url", "", "target URL (POST)")
	bodyPath := flag.String("body", "", "request body file, or a directory of body files sent in rotation")
	rate := flag.Float64("rate", 500, "offered requests per second (fixed schedule)")
	duration := flag.Duration("duration", 10*time.Second, "measured period")
	warmup := flag.Duration("warmup", 2*time.Second, "unmeasured period at the same rate before it")
	conns := flag.Int("conns", 16, "keep-alive HTTP/1.1 connections (at most one request in flight on each)")
	cacert := flag.String("cacert", "", "CA certificate (PEM) to verify the server against")
	timeout := flag.Duration("timeout", 10*time.Second, "per-request timeout")
	drain := flag.Duration("drain", 10*time.Second, "after the schedule ends, how long queued requests may still run")
	contentType := flag.String("content-type", "application/json", "Content-Type header")
	rawPath := flag.String("raw", "", "also write each measured 2xx latency (microseconds, one a line) to this file")
	flag.Parse()
	if *url == "" || *bodyPath == "" || *rate <= 0 || *conns < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "podsizer-loadgen: -url and -body are required; -rate, -conns, -duration must be positive")
		flag.Usage()
		os.Exit(2)
	}
	bodies, err := loadBodies(*bodyPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "podsizer-loadgen: -body: %v\n", err)
		os.Exit(2)
	}
	client, err := newClient(*cacert, *conns, *timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "podsizer-loadgen: %v\n", err)
		os.Exit(2)
	}

	nWarm := int(math.Round(rateTimes(*rate, *warmup)))
	nMeas := int(math.Round(rateTimes(*rate, *duration)))
	total := nWarm + nMeas
	interval := float64(time.Second) / *rate

	type job struct {
		i   int
		due time.Time
	}
	// Buffer the whole schedule: the scheduler never blocks, so due times never slip.
	jobs := make(chan job, total)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	start := time.Now().Add(50 * time.Millisecond)
	measStart := start.Add(time.Duration(float64(nWarm) * interval))
	hardStop := measStart.Add(*duration + *drain)

	results := make([][]outcome, *conns)
	var wg sync.WaitGroup
	for w := 0; w < *conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			local := make([]outcome, 0, total / *conns + 16)
			for j := range jobs {
				if time.Now().After(hardStop) {
					continue // left unsent: counted below
				}
				body := bodies[j.i%len(bodies)]
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, *url, bytes.NewReader(body))
				if err != nil {
					local = append(local, outcome{measured: j.i >= nWarm, err: err, done: time.Now()})
					continue
				}
				req.Header.Set("Content-Type", *contentType)
				req.ContentLength = int64(len(body))
				o := outcome{measured: j.i >= nWarm}
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					o.status = resp.StatusCode
				}
				o.done = time.Now()
				o.latency = o.done.Sub(j.due)
				o.err = err
				local = append(local, o)
			}
			results[w] = local
		}(w)
	}

	for i := 0; i < total; i++ {
		due := start.Add(time.Duration(float64(i) * interval))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		jobs <- job{i: i, due: due}
	}
	close(jobs)
	wg.Wait()

	res := result{
		URL: *url, OfferedRPS: *rate, DurationS: duration.Seconds(), WarmupS: warmup.Seconds(),
		Conns: *conns, Bodies: len(bodies), Scheduled: nMeas, Status: map[string]int{},
		GoMaxProcs: runtime.GOMAXPROCS(0), BodyBytesMin: math.MaxInt,
	}
	for _, b := range bodies {
		res.BodyBytesMin = min(res.BodyBytesMin, len(b))
		res.BodyBytesMax = max(res.BodyBytesMax, len(b))
	}
	var lat []time.Duration
	var last time.Time
	var okDone []time.Time // completion times of every 2xx reply, warm-up ones included
	var sum time.Duration
	seen := map[string]bool{}
	for _, local := range results {
		for _, o := range local {
			if o.err == nil && o.status >= 200 && o.status <= 299 {
				okDone = append(okDone, o.done)
			}
			if !o.measured {
				res.WarmupDone++
				continue
			}
			res.Sent++
			if o.done.After(last) {
				last = o.done
			}
			if o.err != nil {
				res.Errors++
				msg := o.err.Error()
				if errors.Is(o.err, context.DeadlineExceeded) || strings.Contains(msg, "Timeout") {
					msg = "timeout: " + msg
				}
				if !seen[msg] && len(res.ErrorSamples) < 5 {
					seen[msg] = true
					res.ErrorSamples = append(res.ErrorSamples, msg)
				}
				res.Status["transport"]++
				continue
			}
			res.Status[fmt.Sprint(o.status)]++
			if o.status < 200 || o.status > 299 {
				res.Errors++
				continue
			}
			res.OK++
			lat = append(lat, o.latency)
			sum += o.latency
		}
	}
	res.Unsent = nMeas - res.Sent
	if !last.IsZero() {
		res.ElapsedS = last.Sub(measStart).Seconds()
	}
	// Throughput: 2xx replies completed in the window from the end of the warm-up to the end of the
	// measured period, or to the last measured reply if that came later (server behind). Replies to
	// warm-up requests that complete inside the window count: under overload they are what the server
	// is busy with then.
	window := math.Max(duration.Seconds(), res.ElapsedS)
	windowEnd := measStart.Add(time.Duration(window * float64(time.Second)))
	inWindow := 0
	for _, t := range okDone {
		if !t.Before(measStart) && !t.After(windowEnd) {
			inWindow++
		}
	}
	res.WindowS = window
	res.AchievedRPS = float64(inWindow) / window
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	res.P50, res.P90, res.P99, res.P999 = pct(lat, 0.50), pct(lat, 0.90), pct(lat, 0.99), pct(lat, 0.999)
	if len(lat) > 0 {
		res.Max = ms(lat[len(lat)-1])
		res.Mean = ms(sum) / float64(len(lat))
	}
	res.P50, res.P90, res.P99, res.P999 = nanOrNum(res.P50), nanOrNum(res.P90), nanOrNum(res.P99), nanOrNum(res.P999)
	if *rawPath != "" {
		var buf bytes.Buffer
		for _, d := range lat {
			fmt.Fprintf(&buf, "%d\n", d.Microseconds())
		}
		if err := os.WriteFile(*rawPath, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "podsizer-loadgen: -raw: %v\n", err)
			os.Exit(1)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(os.Stderr, "podsizer-loadgen: %v\n", err)
		os.Exit(1)
	}
}

func rateTimes(rate float64, d time.Duration) float64 { return rate * d.Seconds() }
