package exhaust

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"orch.io/orch/cmd/orchchaos/internal/eventsapi"
)

// The exhaustion campaign's attackers, all at once for its duration.
const (
	slowBodies    = 200      // requests whose body never finishes
	slowReaders   = 100      // lists whose answer is never read
	bigHeaders    = 100      // requests with a header of bigHeaderLen
	bigHeaderLen  = 2 << 20  // twice the server's header limit
	bigBodies     = 20       // creates with a body of bigBodyLen
	bigBodyLen    = 16 << 20 // more than five times the 3 MiB body limit
	stormWatchers = 2000     // watches opened at once
	seedEvents    = 4000     // events stored before, with 1,000-byte notes: a list of about 6 MB, more than loopback buffers hold
	probeEvery    = 20 * time.Millisecond
	traceStart    = 3 * time.Second // with --profiles, both sides traced this long from the attack's start
)

// exhaustReport is what the exhaustion campaign measured.
type exhaustReport struct {
	readyz                  []time.Duration // every /readyz answer's latency
	readyzFailed            int             // /readyz not answered 200
	served, failed          int             // the well-behaved client's writes and reads
	servedLatencies         []time.Duration
	rssBefore, rssMax       int64           // the server's resident memory, KiB
	etcdRSS                 *[3]int64       // with --peer, its etcd's resident memory, KiB: before, at most, at the end
	readyzNewConns          int             // /readyz answers that came on a new connection
	rssEnd                  int64           // at the end of the window, the attackers still there
	rssAfter                int64           // 30 s after every attacker has gone
	rssLater                int64           // two minutes after
	readyzSlowest           []string        // the /readyz answers over 100 ms, when, and where their time went
	readyzFailures          []string        // the /readyz answers not 200, and when
	idle                    int             // idle connections held open
	idleClosed              []time.Duration // how long each idle connection the server closed was open
	slowBodyAnswers         map[string]int
	bigHeaderAnswers        map[string]int
	bigBodyAnswers          map[string]int
	watchesOpened, watchErr int
	watchRefusals           map[string]int // the watches not opened, by answer
	lastWatchOpened         time.Duration  // into the window: how long the attackers took to open the storm
	heaps                   []string       // the server's memory as its runtime counts it, at each point
	readyzServerSide        string         // the probe's answers as the server timed them
	serverTiming            string         // what the server's timing covers
	schedWaits              []string       // the server's runtime over the window's first seconds and all of it: waits to run, collections, CPU
}

// problems are what the campaign holds the server to: /readyz always 200 and the well-behaved
// client always served. Latency and memory are figures, reported beside.
func (r exhaustReport) problems() []string {
	var out []string
	if r.readyzFailed > 0 {
		out = append(out, fmt.Sprintf("/readyz not answered 200 %d times: %s", r.readyzFailed, strings.Join(r.readyzFailures, "; ")))
	}
	if r.failed > 0 {
		out = append(out, fmt.Sprintf("the well-behaved client failed %d times", r.failed))
	}
	if r.served == 0 {
		out = append(out, "the well-behaved client was never served")
	}
	return out
}

// runExhaust starts orch-apiserver on its embedded etcd and, for o.exhaust, holds o.idle idle
// connections, slow bodies, unread answers, oversized headers and bodies and a watch storm against
// it, while a probe asks /readyz every 20 ms and a well-behaved client creates and reads events.
// Target is the server under attack, as Run's caller started it.
type Target struct {
	Name    string       // its program
	URL     string       // its https base
	Client  *http.Client // trusting its certificate
	CAFile  string       // its certificate
	Group   string       // the group serving its Events: "" for orch's
	PID     int          // its process
	EtcdPID int          // kube-apiserver's etcd's process; 0 for orch-apiserver's embedded etcd
	Stop    func()       // ends it
}

// Options are the campaign's flags.
type Options struct {
	Duration          time.Duration // the attack's window (--exhaust)
	Idle              int           // idle connections held through it
	Profiles          string        // where the server's profiles and traces go; "" for none
	AttackersShareCPU bool          // the attackers at the server's CPU weight
	Attackers         Attackers     // the attackers to run
	MemoryAfter       bool          // measure what the server keeps 30 s and 2 min after
	Peer              bool          // the server is kube-apiserver on an etcd of its own
}

// Run starts the server with start, once this process is in the server's CPU group (the server
// and its children start there), attacks it for o.Duration while the bystanders measure it, and
// prints the figures. It answers the problems the server is held to (/readyz not answered 200,
// the well-behaved client not served), none when it passed.
func Run(ctx context.Context, o Options, start func(context.Context) (*Target, error), out io.Writer) ([]string, error) {
	// The server and the bystanders start in the server's group, this process leaves it for the
	// attackers' before the attack, and comes back once they have ended.
	procSelfCgroup, _ := os.ReadFile("/proc/self/cgroup")
	cpu := planCPU("/sys/fs/cgroup", string(procSelfCgroup), os.Getpid(), os.Geteuid(), o.AttackersShareCPU)
	if err := cpu.apply(); err != nil {
		cpu = cpu.failed(err)
	}
	if o.Peer {
		cpu.who = "kube-apiserver and its etcd"
	}
	fmt.Fprintln(out, "cpu:", cpu)
	defer func() {
		if err := cpu.undo(); err != nil {
			fmt.Fprintln(out, "   cpu: removing the groups:", err)
		}
	}()
	srv, err := start(ctx)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	// Every request of the attack, the same bytes on either server but for the group's name.
	events := eventsapi.OnGroup(eventsapi.Path, srv.Group)
	// Each transport gets a copy: one that speaks HTTP/2 adds h2 to the protocols it offers.
	tlsConfig := srv.Client.Transport.(*http.Transport).TLSClientConfig.Clone()
	host := strings.TrimPrefix(srv.URL, "https://")
	if err := seed(srv); err != nil {
		return nil, err
	}
	r := exhaustReport{serverTiming: "its non-resource GETs, from its first filter", rssBefore: rssKiB(srv.PID), slowBodyAnswers: map[string]int{}, bigHeaderAnswers: map[string]int{}, bigBodyAnswers: map[string]int{}, watchRefusals: map[string]int{}}
	etcdRSS := func() int64 { return 0 }
	if srv.EtcdPID != 0 {
		etcdRSS = func() int64 { return rssKiB(srv.EtcdPID) }
		r.etcdRSS = &[3]int64{etcdRSS(), 0, 0}
		r.serverTiming = "/readyz, from its handler's start, after authentication and priority and fairness"
	}
	var mu sync.Mutex // r's, from here on
	heap := func(point string, gc bool) {
		line := point + ": no heap profile: "
		if s, err := heapSnapshot(srv, point, o.Profiles, gc); err != nil {
			line += err.Error()
		} else {
			line = s.String()
		}
		mu.Lock()
		r.heaps = append(r.heaps, line)
		mu.Unlock()
	}
	heap("before", false)
	fmt.Fprintf(out, "%s on %s, %d events stored, resident %d MiB; for %v: %d idle connections, attackers %s (%d slow bodies, %d unread lists, %d headers of %d MiB, %d bodies of %d MiB, %d watches at once)\n",
		srv.Name, srv.URL, seedEvents, r.rssBefore>>10, o.Duration, o.Idle, o.Attackers, slowBodies, slowReaders, bigHeaders, bigHeaderLen>>20, bigBodies, bigBodyLen>>20, stormWatchers)
	_, listRV, err := eventsapi.List(srv.Client, srv.URL, srv.Group)
	if err != nil {
		return nil, err
	}
	// Idle connections, opened before the window and held through it: each asks once over
	// HTTP/1.1 with keep-alive, then says nothing more.
	var conns connSet
	defer conns.closeAll()
	t0 := time.Now()
	var idle atomic.Int64
	var dialErr atomic.Value
	var opening sync.WaitGroup
	var closedMu sync.Mutex
	var closedAfter []time.Duration // how long each idle connection the server closed was open
	for range 32 {
		opening.Add(1)
		go func() {
			defer opening.Done()
			for idle.Add(1) <= int64(o.Idle) {
				c, err := raw(tlsConfig, host, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
				if err != nil {
					// Not retried: a connection refused is a figure, reported at the end.
					idle.Add(-1)
					dialErr.Store(err)
					return
				}
				br := bufio.NewReader(c)
				if resp, err := http.ReadResponse(br, nil); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
				}
				conns.add(c)
				// Nothing more comes on an idle connection but its end, when the server closes it.
				opened := time.Now()
				go func() {
					if _, err := br.ReadByte(); err != nil && !errors.Is(err, net.ErrClosed) {
						closedMu.Lock()
						closedAfter = append(closedAfter, time.Since(opened))
						closedMu.Unlock()
					}
				}()
			}
		}()
	}
	opening.Wait()
	if r.idle = int(min(idle.Load(), int64(o.Idle))); r.idle < o.Idle {
		return nil, fmt.Errorf("%d of %d idle connections opened: %v", r.idle, o.Idle, dialErr.Load())
	}
	fmt.Fprintf(out, "%d idle connections open after %v, resident %d MiB\n", r.idle, time.Since(t0).Round(time.Second), rssKiB(srv.PID)>>10)
	heap("idle", false)
	// The bystanders, in a process of their own, the probe's connection open before the attack,
	// as a monitor's kept-alive connection is: their answers are the server's, not a handshake's
	// queued behind the attack's thousands, nor the attackers' scheduling.
	by, err := startBystanders(srv)
	if err != nil {
		return nil, err
	}
	defer func() { by.stop(); _ = by.wait() }() // on an error; the reader below waits otherwise
	if err := cpu.toAttackers(); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	serverSide, serverSideErr := scrapeNonResourceGETs(srv)
	schedStart, schedErr := scrapeRuntime(srv)
	if o.Profiles != "" {
		// Both sides' scheduling over the attack's first seconds, when every attacker starts at
		// once: the server's runtime trace and orchchaos' own (go tool trace FILE).
		stopTrace := traceSelf(filepath.Join(o.Profiles, "trace-orchchaos-start.out"), out)
		go func() {
			if err := serverProfile(srv, "/debug/pprof/trace", filepath.Join(o.Profiles, "trace-start.out"), traceStart); err != nil {
				fmt.Fprintln(out, "   trace:", err)
			}
			stopTrace()
		}()
	}
	window := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var wg sync.WaitGroup
	goRun := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }

	// The probe and the well-behaved client, each on a connection of its own (the probe's open).
	if err := by.start(); err != nil {
		return nil, fmt.Errorf("the bystanders: %w", err)
	}
	goRun(func() { <-ctx.Done(); by.stop() })
	goRun(func() {
		end := window.Add(o.Duration)
		err := by.each(func(b bystanderLine) {
			if b.sent.Before(window) || !b.sent.Before(end) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if b.kind == clientLine {
				if b.status == clientOK {
					r.served++
					r.servedLatencies = append(r.servedLatencies, b.took)
				} else {
					r.failed++
					fmt.Fprintln(out, "   the well-behaved client:", b.status)
				}
				return
			}
			r.readyz = append(r.readyz, b.took)
			if strings.HasPrefix(b.details, "new connection") {
				r.readyzNewConns++
			}
			if b.took > 100*time.Millisecond {
				r.readyzSlowest = append(r.readyzSlowest, fmt.Sprintf("%v at %v (%s)", b.took.Round(time.Millisecond), b.sent.Sub(window).Round(time.Millisecond), b.details))
			}
			if b.status != "200" {
				r.readyzFailed++
				r.readyzFailures = append(r.readyzFailures, fmt.Sprintf("%s at %v", b.status, b.sent.Sub(window).Round(time.Second)))
			}
		})
		if err == nil {
			err = by.wait()
		}
		if err != nil {
			fmt.Fprintln(out, "   the bystanders:", err)
		}
	})
	goRun(func() {
		for ctx.Err() == nil {
			if kib := rssKiB(srv.PID); kib > 0 {
				mu.Lock()
				r.rssMax = max(r.rssMax, kib)
				if r.etcdRSS != nil {
					r.etcdRSS[1] = max(r.etcdRSS[1], etcdRSS())
				}
				mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	// The server's scheduler over the attack's first seconds, when the slow probes come.
	schedSince := func(what string) {
		if schedErr != nil {
			return
		}
		now, err := scrapeRuntime(srv)
		line := what + ": "
		if err != nil {
			line += err.Error()
		} else {
			line += now.since(schedStart)
		}
		mu.Lock()
		r.schedWaits = append(r.schedWaits, line)
		mu.Unlock()
	}
	goRun(func() {
		for _, at := range []time.Duration{time.Second, 3 * time.Second} {
			select {
			case <-time.After(time.Until(window.Add(at))):
				schedSince(fmt.Sprintf("first %v", at))
			case <-ctx.Done():
				return
			}
		}
	})
	// The server under the attack: its heap 10 s in, and with --profiles where its CPU goes.
	goRun(func() {
		if o.Profiles != "" {
			go func() {
				time.Sleep(5 * time.Second)
				if err := serverProfile(srv, "/debug/pprof/profile", filepath.Join(o.Profiles, "cpu-window.pb.gz"), 10*time.Second); err != nil {
					fmt.Fprintln(out, "   CPU profile:", err)
				}
			}()
		}
		select {
		case <-time.After(10 * time.Second):
			heap("window", false)
		case <-ctx.Done():
		}
	})
	// Slow bodies: a create announcing a megabyte that sends 100 bytes of it.
	for range count(o.Attackers, attackSlowBodies, slowBodies) {
		goRun(func() {
			c, err := raw(tlsConfig, host, "POST "+events+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"+strings.Repeat(" ", 100))
			answer := "not answered"
			if err != nil {
				answer = "refused: " + err.Error()
			} else {
				conns.add(c)
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					answer = strconv.Itoa(resp.StatusCode)
					if resp.StatusCode == http.StatusBadRequest {
						// Not the timeout's answer: why, from the Status.
						var status struct{ Message string }
						_ = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&status)
						answer += " " + status.Message
						if !time.Now().Before(window.Add(o.Duration)) {
							answer += ", after the window"
						}
					}
				} else if ctx.Err() == nil {
					answer = "closed"
				}
			}
			mu.Lock()
			r.slowBodyAnswers[answer]++
			mu.Unlock()
		})
	}
	// Slow readers: a list of every event, never read.
	for range count(o.Attackers, attackUnreadLists, slowReaders) {
		goRun(func() {
			if c, err := raw(tlsConfig, host, "GET "+events+" HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
				conns.add(c)
			}
		})
	}
	// Oversized headers, and bodies.
	for range count(o.Attackers, attackBigHeaders, bigHeaders) {
		goRun(func() {
			answer := "closed"
			c, err := raw(tlsConfig, host, "GET /readyz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", bigHeaderLen)+"\r\n\r\n")
			if err == nil {
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					answer = strconv.Itoa(resp.StatusCode)
				}
				c.Close()
			}
			mu.Lock()
			r.bigHeaderAnswers[answer]++
			mu.Unlock()
		})
	}
	body := bytes.Repeat([]byte(" "), bigBodyLen)
	for range count(o.Attackers, attackBigBodies, bigBodies) {
		goRun(func() {
			c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true}}
			answer := "closed"
			if resp, err := c.Post(srv.URL+events, "application/json", bytes.NewReader(body)); err == nil {
				answer = strconv.Itoa(resp.StatusCode)
				resp.Body.Close()
			}
			mu.Lock()
			r.bigBodyAnswers[answer]++
			mu.Unlock()
		})
	}
	// The watch storm: 20 clients of 100 watches each from the list's resourceVersion (taken
	// before the window), as reflectors start after a list, read to the end. Go's transport dials
	// a connection for every request waiting until one has negotiated HTTP/2, so the storm opens
	// about 2,000 TLS connections at once, not 20.
	for i := range count(o.Attackers, attackWatchStorm, stormWatchers) / 100 {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true}}
		for range 100 {
			goRun(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+events+"?watch=true&resourceVersion="+strconv.FormatInt(listRV, 10)+"&timeoutSeconds="+strconv.Itoa(600+i), nil)
				resp, err := c.Do(req)
				mu.Lock()
				if err == nil && resp.StatusCode == http.StatusOK {
					r.watchesOpened++
					r.lastWatchOpened = max(r.lastWatchOpened, time.Since(window))
				} else if ctx.Err() == nil {
					r.watchErr++
					if err != nil {
						r.watchRefusals["not answered"]++
					} else {
						r.watchRefusals[strconv.Itoa(resp.StatusCode)]++
					}
				}
				mu.Unlock()
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	}
	<-ctx.Done()
	r.rssEnd = rssKiB(srv.PID)
	if r.etcdRSS != nil {
		r.etcdRSS[2] = etcdRSS()
	}
	if serverSideErr == nil {
		var end nonResourceGETs
		if end, serverSideErr = scrapeNonResourceGETs(srv); serverSideErr == nil {
			r.readyzServerSide = end.since(serverSide)
		}
	}
	if serverSideErr != nil {
		r.readyzServerSide = "not known: " + serverSideErr.Error()
	}
	schedSince("the window")
	if schedErr != nil {
		r.schedWaits = []string{"not known: " + schedErr.Error()}
	}
	heap("end", false)
	closedMu.Lock()
	r.idleClosed = slices.Clone(closedAfter)
	closedMu.Unlock()
	conns.closeAll()
	wg.Wait()
	if !o.MemoryAfter {
		return r.print(out), nil
	}
	// What the attack left: memory the server keeps after every attacker has gone is a leak.
	time.Sleep(30 * time.Second)
	r.rssAfter = rssKiB(srv.PID)
	heap("after", false)
	// Collected, the heap holds what is live only: the rest of what stays resident is Go's to
	// give back, which its scavenger does in the background, a little at a time.
	heap("after-gc", true)
	time.Sleep(90 * time.Second)
	r.rssLater = rssKiB(srv.PID)
	heap("later", false)
	if o.Profiles != "" {
		fmt.Fprintf(out, "profiles in %s (go tool pprof -top FILE)\n", o.Profiles)
	}
	return r.print(out), nil
}

// print writes the figures and answers the problems, the figures beside.
func (r exhaustReport) print(out io.Writer) []string {
	slices.Sort(r.readyz)
	slices.Sort(r.servedLatencies)
	fmt.Fprintf(out, "/readyz: %d answers, %d not 200; latency p50 %v, p99 %v, longest %v; %d over 100ms; %d on a new connection\n",
		len(r.readyz), r.readyzFailed, pct(r.readyz, 50), pct(r.readyz, 99), pct(r.readyz, 100), len(r.readyz)-countUnder(r.readyz, 100*time.Millisecond), r.readyzNewConns)
	fmt.Fprintf(out, "/readyz as the server timed it (%s in the window): %s\n", r.serverTiming, r.readyzServerSide)
	fmt.Fprintf(out, "the server's runtime: goroutines' waits to run sampled (go_sched_latencies_seconds), collections, CPU: %s\n", strings.Join(r.schedWaits, "; "))
	fmt.Fprintf(out, "the well-behaved client: %d creates and reads served, %d failed; latency p50 %v, p99 %v, longest %v\n",
		r.served, r.failed, pct(r.servedLatencies, 50), pct(r.servedLatencies, 99), pct(r.servedLatencies, 100))
	fmt.Fprintf(out, "idle connections held through: %d; slow bodies: %v; oversized headers: %v; oversized bodies: %v; watches opened %d (%d refused: %v), the last %v into the window\n",
		r.idle, r.slowBodyAnswers, r.bigHeaderAnswers, r.bigBodyAnswers, r.watchesOpened, r.watchErr, r.watchRefusals, r.lastWatchOpened.Round(time.Millisecond))
	slices.Sort(r.idleClosed)
	fmt.Fprintf(out, "idle connections the server closed during the window: %d, after %v to %v open\n", len(r.idleClosed), pct(r.idleClosed, 0), pct(r.idleClosed, 100))
	after := "not measured (--memory-after=false)"
	if r.rssLater > 0 {
		after = fmt.Sprintf("%d MiB 30 s after the attackers left, %d MiB 2 min after", r.rssAfter>>10, r.rssLater>>10)
	}
	fmt.Fprintf(out, "resident memory: %d MiB before, at most %d MiB under the attack, %d MiB at its end, %s\n", r.rssBefore>>10, r.rssMax>>10, r.rssEnd>>10, after)
	if r.etcdRSS != nil {
		fmt.Fprintf(out, "its etcd's resident memory: %d MiB before, at most %d MiB under the attack, %d MiB at its end\n", r.etcdRSS[0]>>10, r.etcdRSS[1]>>10, r.etcdRSS[2]>>10)
	}
	for _, h := range r.heaps {
		fmt.Fprintln(out, "heap", h)
	}
	if len(r.readyzSlowest) > 0 {
		fmt.Fprintf(out, "/readyz over 100ms, when in the window, and where the time went: %s\n", strings.Join(r.readyzSlowest, "; "))
	}
	return r.problems()
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted) - 1) * p / 100
	return sorted[i].Round(100 * time.Microsecond)
}

func countUnder(sorted []time.Duration, d time.Duration) int {
	n, _ := slices.BinarySearch(sorted, d)
	return n
}

// seed stores seedEvents events, so that a list is large.
func seed(srv *Target) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < seedEvents; i += 8 {
				name := fmt.Sprintf("seed-%d", i)
				event := strings.Replace(string(eventsapi.JSON(name, name, "seed")), `"note":"`+name+`"`, `"note":"`+strings.Repeat("n", 1000)+`"`, 1)
				if err := createEvent(srv.Client, srv.URL, srv.Group, name, []byte(event)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// createEvent stores event, an Event of orch's group named name, on the server at url serving
// Events in group; an error unless it was created.
func createEvent(c *http.Client, url, group, name string, event []byte) error {
	resp, err := c.Post(url+eventsapi.OnGroup(eventsapi.Path, group), "application/json", strings.NewReader(eventsapi.OnGroup(string(event), group)))
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("create %s: %d %s", name, resp.StatusCode, body)
	}
	return nil
}

// raw opens a TLS connection speaking HTTP/1.1 and writes request on it.
func raw(base *tls.Config, host, request string) (*tls.Conn, error) {
	cfg := base.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	c, err := tls.Dial("tcp", host, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, request); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// connSet holds connections open until the end.
type connSet struct {
	mu    sync.Mutex
	conns []*tls.Conn
	done  bool
}

func (s *connSet) add(c *tls.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		c.Close()
		return
	}
	s.conns = append(s.conns, c)
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// rssKiB is a process's resident memory, from /proc.
func rssKiB(pid int) int64 {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// count is how many of an attacker the campaign starts: n when the set has it, else none.
func count(set Attackers, attacker string, n int) int {
	if set[attacker] {
		return n
	}
	return 0
}
