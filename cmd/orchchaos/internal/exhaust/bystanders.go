package exhaust

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	apiservertest "orch.io/orch/components/apiserver/app/apptest"

	"orch.io/orch/cmd/orchchaos/internal/eventsapi"
)

// The exhaustion campaign's bystanders, the /readyz probe and the well-behaved client, run in a
// process of their own (orchchaos --bystanders), as a monitor, a load balancer and a user do on
// machines of their own: in the attackers' process their goroutines waited behind the attackers'
// thousands (2,400 runnable at once while they dial), their latencies that process's scheduling
// as much as the server's; apart, they can be weighted apart (cpuweight.go).

// bystanderLine is one answer as the bystanders' process writes it: whose (the probe's /readyz,
// or the well-behaved client's create and read), when it was sent, how long it took, its status
// (the probe's HTTP status; the client's "ok" or its error), and where its time went.
type bystanderLine struct {
	kind    string
	sent    time.Time
	took    time.Duration
	status  string
	details string
}

const (
	readyzLine = "readyz"
	clientLine = "client"
	clientOK   = "ok"
)

func (b bystanderLine) String() string {
	oneLine := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	return fmt.Sprintf("%s %d %d %s\t%s", b.kind, b.sent.UnixNano(), b.took.Nanoseconds(), oneLine.Replace(b.status), oneLine.Replace(b.details))
}

func parseBystanderLine(line string) (bystanderLine, error) {
	head, details, _ := strings.Cut(line, "\t")
	fields := strings.SplitN(head, " ", 4)
	if len(fields) != 4 || (fields[0] != readyzLine && fields[0] != clientLine) {
		return bystanderLine{}, fmt.Errorf("bystanders: %q", line)
	}
	sent, err1 := strconv.ParseInt(fields[1], 10, 64)
	took, err2 := strconv.ParseInt(fields[2], 10, 64)
	if err1 != nil || err2 != nil {
		return bystanderLine{}, fmt.Errorf("bystanders: %q", line)
	}
	return bystanderLine{kind: fields[0], sent: time.Unix(0, sent), took: time.Duration(took), status: fields[3], details: details}, nil
}

// RunBystanders opens the probe's connection to url (kept alive, as a monitor's is), writes
// "ready", and from a "start" line on in until in ends asks /readyz every probeEvery on it while
// the well-behaved client creates and reads an event (in group, "" for orch's) every probeEvery on
// a client of its own; one line per answer on out.
func RunBystanders(url, caFile, group string, in io.Reader, out io.Writer) error {
	probe, err := apiservertest.TrustingClient(caFile, 10*time.Second)
	if err != nil {
		return err
	}
	probe.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	if _, err := getBody(probe, url+"/readyz"); err != nil {
		return fmt.Errorf("the first /readyz: %w", err)
	}
	client, err := apiservertest.TrustingClient(caFile, 30*time.Second)
	if err != nil {
		return err
	}
	client.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	w := bufio.NewWriter(out)
	fmt.Fprintln(w, "ready")
	if err := w.Flush(); err != nil {
		return err
	}
	lines := bufio.NewScanner(in)
	if !lines.Scan() {
		return lines.Err() // ended before it started
	}
	if lines.Text() != "start" {
		return fmt.Errorf("%q where start was expected", lines.Text())
	}
	stop := make(chan struct{})
	go func() {
		for lines.Scan() {
		}
		close(stop)
	}()
	var mu sync.Mutex
	emit := func(b bystanderLine) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(w, b)
		w.Flush()
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stopped() {
			var pt probeTrace
			t0 := time.Now()
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), pt.trace()), http.MethodGet, url+"/readyz", nil)
			resp, err := probe.Do(req)
			line := bystanderLine{kind: readyzLine, sent: t0, took: time.Since(t0)}
			if err != nil {
				line.status = err.Error()
			} else {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				line.status = strconv.Itoa(resp.StatusCode)
			}
			line.details = pt.describe(t0)
			emit(line)
			time.Sleep(probeEvery)
		}
	})
	wg.Go(func() {
		for i := 0; !stopped(); i++ {
			name := fmt.Sprintf("good-%d", i)
			t0 := time.Now()
			err := createEvent(client, url, group, name, eventsapi.JSON(name, name, "good"))
			if err == nil {
				var resp *http.Response
				if resp, err = client.Get(url + eventsapi.OnGroup(eventsapi.Path, group) + "/" + name); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("get %s: %d", name, resp.StatusCode)
					}
				}
			}
			line := bystanderLine{kind: clientLine, sent: t0, took: time.Since(t0), status: clientOK}
			if err != nil {
				line.status = err.Error()
			}
			emit(line)
			// Paced as the probe is: alone at the server's weight a closed loop made 200-470
			// creates and reads a second, more of the server's CPU than the attack, and left
			// the attackers none to attack with.
			time.Sleep(probeEvery)
		}
	})
	wg.Wait()
	return nil
}

// bystanders is the bystanders' process running beside the campaign.
type bystanders struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
}

// startBystanders starts the bystanders' process on srv and waits until the probe's connection is
// open; they begin at start.
func startBystanders(srv *Target) (*bystanders, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "--bystanders", srv.URL, "--bystanders-ca", srv.CAFile, "--bystanders-group", srv.Group)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &bystanders{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	if !b.lines.Scan() || b.lines.Text() != "ready" {
		b.stop()
		_ = b.cmd.Wait()
		return nil, fmt.Errorf("the bystanders' process did not start: %q %v", b.lines.Text(), b.lines.Err())
	}
	return b, nil
}

// start begins the probe and the well-behaved client.
func (b *bystanders) start() error {
	_, err := io.WriteString(b.stdin, "start\n")
	return err
}

// each calls f with every answer until the process ends.
func (b *bystanders) each(f func(bystanderLine)) error {
	return eachBystanderLine(b.lines, f)
}

func eachBystanderLine(lines *bufio.Scanner, f func(bystanderLine)) error {
	for lines.Scan() {
		line, err := parseBystanderLine(lines.Text())
		if err != nil {
			return err
		}
		f(line)
	}
	return lines.Err()
}

// stop ends the bystanders: each finishes its current request, writes it, and the process exits.
func (b *bystanders) stop() {
	b.stdin.Close()
}

func (b *bystanders) wait() error { return b.cmd.Wait() }

// probeTrace is when a /readyz probe's steps happened, as its client saw them.
type probeTrace struct {
	gotConn, handshakeStart, handshakeDone, wrote, firstByte time.Time
	reused                                                   bool
}

func (p *probeTrace) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { p.gotConn, p.reused = time.Now(), i.Reused },
		TLSHandshakeStart:    func() { p.handshakeStart = time.Now() },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { p.handshakeDone = time.Now() },
		WroteRequest:         func(httptrace.WroteRequestInfo) { p.wrote = time.Now() },
		GotFirstResponseByte: func() { p.firstByte = time.Now() },
	}
}

// describe says where a probe started at t0 spent its time: the connection (a new one's TLS
// handshake), the request written, the answer's first byte.
func (p *probeTrace) describe(t0 time.Time) string {
	at := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Sub(t0).Round(time.Millisecond).String()
	}
	conn := "connection reused"
	if !p.reused {
		conn = "new connection, TLS handshake " + at(p.handshakeStart) + " to " + at(p.handshakeDone)
	}
	return fmt.Sprintf("%s, connection at %s, request written at %s, first byte at %s", conn, at(p.gotConn), at(p.wrote), at(p.firstByte))
}
