package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

func eventsURL(t target, ns string) string {
	return t.url + "/apis/" + t.group + "/v1/namespaces/" + ns + "/events"
}

// errorLog counts failed requests and keeps the first few for the reader.
type errorLog struct {
	mu      sync.Mutex
	count   int
	samples []string
}

const errorSamples = 5

// add keeps err as a sample; counted says whether it also counts (warm-up errors are only shown).
func (l *errorLog) add(err error, counted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if counted {
		l.count++
	}
	if len(l.samples) < errorSamples {
		l.samples = append(l.samples, err.Error())
	}
}

// post creates one event; anything but 201 Created is an error. The body is read to the end so
// the connection is reused.
func post(ctx context.Context, c *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, bytes.TrimSpace(msg))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

type createResult struct {
	Namespace    string   `json:"namespace"`
	Clients      int      `json:"clients"`
	DurationS    float64  `json:"durationSeconds"`
	Created      int      `json:"created"`
	Stored       int      `json:"storedWithWarmup"`
	PerSecond    float64  `json:"eventsPerSecond"`
	Latency      summary  `json:"latency"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"errorSamples,omitempty"`
	ServerCPUMs  float64  `json:"serverCpuMsPerCreate,omitempty"`
}

// runCreate has each client create events back to back for warmup+duration and measures the
// requests that complete inside the measured window.
func runCreate(ctx context.Context, t target, ns, prefix string, clients int, warmup, duration time.Duration) createResult {
	cpu := t.cpuPer()
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+duration)
	url, events := eventsURL(t, ns), newEventTemplate(t.group, ns)
	var (
		errs errorLog
		wg   sync.WaitGroup
		mu   sync.Mutex
		lat  []time.Duration
		ok   atomic.Int64
	)
	for i := range clients {
		wg.Go(func() {
			c := t.newClient()
			defer c.CloseIdleConnections()
			var mine []time.Duration
			for seq := 0; ctx.Err() == nil; seq++ {
				body := events.newEvent(fmt.Sprintf("%s-c%d-%d", prefix, i, seq), seq, time.Now())
				sent := time.Now()
				if !sent.Before(end) {
					break
				}
				err := post(ctx, c, url, body)
				done := time.Now()
				if ctx.Err() != nil {
					break // interrupted: neither a figure nor the server's error
				}
				if err == nil {
					ok.Add(1)
				}
				if done.Before(measureFrom) || done.After(end) {
					if err != nil {
						errs.add(err, false)
					}
					continue
				}
				if err != nil {
					errs.add(err, true)
					continue
				}
				mine = append(mine, done.Sub(sent))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	cpuMs := cpu(int(ok.Load()))
	return createResult{
		Namespace:    ns,
		Clients:      clients,
		DurationS:    duration.Seconds(),
		Created:      len(lat),
		Stored:       int(ok.Load()),
		PerSecond:    float64(len(lat)) / duration.Seconds(),
		Latency:      summarize(lat),
		Errors:       errs.count,
		ErrorSamples: errs.samples,
		ServerCPUMs:  cpuMs,
	}
}

// fill creates n events in ns with the given number of clients, as fast as the server takes them.
func fill(ctx context.Context, t target, ns, prefix string, clients, n int) (created int, errs *errorLog) {
	errs = &errorLog{}
	url, events := eventsURL(t, ns), newEventTemplate(t.group, ns)
	var next, ok atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			c := t.newClient()
			defer c.CloseIdleConnections()
			for ctx.Err() == nil {
				seq := int(next.Add(1)) - 1
				if seq >= n {
					return
				}
				if err := post(ctx, c, url, events.newEvent(fmt.Sprintf("%s-%d", prefix, seq), seq, time.Now())); err != nil {
					errs.add(err, true)
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	return int(ok.Load()), errs
}
