package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"
)

// watchFrame is the part of a watch frame the tool reads.
type watchFrame struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	} `json:"object"`
}

// addedPrefix and nameMarker are where both servers put an ADDED frame's type and its object's
// name: the type first, and the object's metadata, name first, before any other field of the object
// holds a "metadata" (the kind and apiVersion come before it, or nothing does).
var (
	addedPrefix = []byte(`{"type":"ADDED","object":{`)
	typePrefix  = []byte(`{"type":"`)
	nameMarker  = []byte(`"metadata":{"name":"`)
)

// addedName answers the name of the event an ADDED frame carries, and false for a frame of any
// other type. It reads the name where both servers write it rather than decoding the frame: with
// 10,000 watchers, decoding every 1.7 KB frame was 43% of orchload's CPU, taken from the server
// measured beside it on the same cores. A frame laid out otherwise, or not ending as a whole frame
// does, is decoded; the rest of a frame read the quick way is not checked (the conformance suite
// checks what watches send, this tool times when it arrives).
func addedName(line []byte) (string, bool, error) {
	if bytes.HasSuffix(bytes.TrimRight(line, "\r\n"), []byte("}}")) {
		if name, added, ok := quickName(line); ok {
			return name, added, nil
		}
	}
	var f watchFrame
	if err := json.Unmarshal(line, &f); err != nil {
		return "", false, err
	}
	return f.Object.Metadata.Name, f.Type == "ADDED", nil
}

// quickName reads an ADDED frame's name, or tells a frame of another type, where both servers
// write them; false when the frame is laid out otherwise.
func quickName(line []byte) (name string, added, ok bool) {
	if bytes.HasPrefix(line, addedPrefix) {
		at := bytes.Index(line, nameMarker)
		if at < 0 {
			return "", false, false
		}
		name, ok = plainString(line[at+len(nameMarker):])
		return name, true, ok
	}
	if rest, found := bytes.CutPrefix(line, typePrefix); found {
		t, plain := plainString(rest)
		return "", false, plain && t != "ADDED"
	}
	return "", false, false
}

// plainString is the JSON string b begins inside of (after its opening quote), when it has no
// escapes.
func plainString(b []byte) (string, bool) {
	end := bytes.IndexByte(b, '"')
	if end < 0 || bytes.IndexByte(b[:end], '\\') >= 0 {
		return "", false
	}
	return string(b[:end]), true
}

// watcher is one watch stream and the receive time of each ADDED event on it, by name.
type watcher struct {
	got      map[string]time.Time
	err      error
	reopened int           // failed attempts to open the watch before it opened
	full     chan struct{} // closed once every expected event arrived
}

// openAttempts is how often a watch is opened before its failure fails the run: thousands opened at
// once, a server may drop a few connections (kube-apiserver did, with 10,000), and a client such as
// client-go's reflector opens again. The report counts these.
const openAttempts = 3

// reopenPause is how long a watch that failed to open waits before the next attempt.
var reopenPause = time.Second

type watchResult struct {
	Namespace    string   `json:"namespace"`
	Watchers     int      `json:"watchers"`
	Events       int      `json:"events"`
	RatePerS     float64  `json:"ratePerSecond"`
	SentPerS     float64  `json:"sentPerSecond"` // below RatePerS when the server, busy delivering, took creates slower
	Latency      summary  `json:"latency"`
	Expected     int      `json:"expectedDeliveries"`
	Delivered    int      `json:"delivered"`
	Complete     bool     `json:"everyWatcherGotEveryEvent"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"errorSamples,omitempty"`
	ServerCPUMs  float64  `json:"serverCpuMsPerEvent,omitempty"`
	// IdleWatcherKiB is what the server process's RSS grew per watch while the watches were open
	// and idle; 0 when the server is not this tool's child or there were too few watches to tell.
	IdleWatcherKiB float64 `json:"idleWatcherKiB,omitempty"`
	// Reopened counts watches the server failed to open at the first attempt (see openAttempts).
	Reopened int `json:"watchOpensRetried,omitempty"`
}

// sentRate is the rate n creates paced interval apart went out at, from start until the last was
// answered: one interval is allowed for the last, so a server that keeps up shows the rate asked.
func sentRate(n int, start, end time.Time, interval time.Duration) float64 {
	took := end.Sub(start)
	if n == 0 || took <= 0 {
		return 0
	}
	return float64(n) / max(took, time.Duration(n)*interval).Seconds()
}

// rateHeld tells whether the creates went out at the rate asked, within the 5% pacing by sleeps
// may lose.
func (r watchResult) rateHeld() bool { return r.SentPerS >= 0.95*r.RatePerS }

// minWatchersForMemory is how many open watches it takes for their memory to show in the server's
// RSS: with 100, the few MiB they take are lost in what the collector happens to hold (orch-apiserver
// measured 2-66 KiB per watch from one run to the next, kube-apiserver 0.4-2.2 KiB).
const minWatchersForMemory = 1000

// runWatch opens watchers watches on the empty namespace ns from its current resourceVersion, then
// creates events at rate per second from one client and measures, for every (watcher, event) pair,
// the time from just before the create was sent to the ADDED frame's arrival.
func runWatch(ctx context.Context, t target, ns, prefix string, watchers, events int, rate float64) (watchResult, error) {
	res := watchResult{Namespace: ns, Watchers: watchers, Events: events, RatePerS: rate}
	producer := t.newClient()
	defer producer.CloseIdleConnections()
	var page listPage
	if _, err := get(ctx, producer, eventsURL(t, ns), &page); err != nil {
		return res, err
	}
	url := fmt.Sprintf("%s?watch=true&resourceVersion=%s", eventsURL(t, ns), page.Metadata.ResourceVersion)

	rssBefore := math.NaN()
	if t.rss != nil {
		if v, err := t.rss(); err == nil {
			rssBefore = v
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ws := make([]*watcher, watchers)
	var opened, ended sync.WaitGroup
	for i := range ws {
		w := &watcher{got: make(map[string]time.Time, events), full: make(chan struct{})}
		ws[i] = w
		opened.Add(1)
		ended.Go(func() { w.run(wctx, t.newClient(), url, events, opened.Done) })
	}
	opened.Wait()
	for _, w := range ws {
		if w.err != nil {
			return res, fmt.Errorf("opening a watch (%d attempts): %w", openAttempts, w.err)
		}
		res.Reopened += w.reopened
	}
	if !math.IsNaN(rssBefore) && watchers >= minWatchersForMemory {
		time.Sleep(time.Second) // the watches settle: their first frames are flushed
		if after, err := t.rss(); err == nil && after > rssBefore {
			res.IdleWatcherKiB = (after - rssBefore) * 1024 / float64(watchers)
		}
	}

	// Bodies are made before the clock starts so only the request is timed.
	bodies := make([][]byte, events)
	names := make([]string, events)
	template := newEventTemplate(t.group, ns)
	for i := range bodies {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		bodies[i] = template.newEvent(names[i], i, time.Now())
	}
	sent := make(map[string]time.Time, events)
	var errs errorLog
	cpu := t.cpuPer()
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for i := range bodies {
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		at := time.Now()
		if err := post(ctx, producer, eventsURL(t, ns), bodies[i]); err != nil {
			errs.add(err, true)
			continue
		}
		sent[names[i]] = at
	}
	res.SentPerS = sentRate(len(sent), start, time.Now(), interval)

	// Wait until every watcher saw every event, or for a grace period when some never will (a
	// failed create, a lost frame) so the report can say what is missing.
	graceCtx, graceCancel := context.WithTimeout(ctx, 10*time.Second)
	defer graceCancel()
	for _, w := range ws {
		select {
		case <-w.full:
		case <-graceCtx.Done():
		}
	}
	res.ServerCPUMs = cpu(len(sent))
	cancel()
	ended.Wait()
	for _, w := range ws {
		if w.err != nil {
			errs.add(w.err, true)
		}
	}
	res.Errors, res.ErrorSamples = errs.count, errs.samples

	var lat []time.Duration
	for _, w := range ws {
		for name, at := range sent {
			if got, ok := w.got[name]; ok {
				lat = append(lat, got.Sub(at))
			}
		}
	}
	res.Expected = watchers * len(sent)
	res.Delivered = len(lat)
	res.Complete = res.Delivered == res.Expected && res.Errors == 0
	res.Latency = summarize(lat)
	return res, nil
}

// run reads one watch stream until ctx ends, calling opened once the server has answered.
func (w *watcher) run(ctx context.Context, c *http.Client, url string, expected int, opened func()) {
	defer c.CloseIdleConnections()
	var resp *http.Response
	var err error
	for attempt := 1; ; attempt++ {
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil); err != nil {
			break
		}
		req.Header.Set("Accept", "application/json")
		resp, err = c.Do(req)
		if err == nil || attempt == openAttempts || ctx.Err() != nil {
			break
		}
		w.reopened++
		select {
		case <-ctx.Done():
		case <-time.After(reopenPause):
		}
	}
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("watch answered %d", resp.StatusCode)
	}
	w.err = err
	opened()
	if err != nil {
		return
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var long []byte
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		at := time.Now()
		if err != nil {
			return // the tool cancelled the watch, or the server ended it
		}
		name, added, err := addedName(line)
		if err != nil {
			w.err = errors.Join(w.err, err)
			continue
		}
		if !added {
			continue
		}
		w.got[name] = at
		if len(w.got) == expected {
			close(w.full)
		}
	}
}
