package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/admission/eventratelimit"
	"orch.io/orch/components/authn"
)

// withEventRateLimit runs EventRateLimit with the given limits (JSON) on the server's clock.
func withEventRateLimit(t testing.TB, limits string) func(*Config) {
	return func(c *Config) {
		p, err := eventratelimit.New([]byte(`{"apiVersion":"eventratelimit.admission.orch.io/v1alpha1","kind":"Configuration","limits":`+limits+`}`), c.Clock)
		if err != nil {
			t.Fatal(err)
		}
		c.Admission = map[string]admission.Interface{eventratelimit.PluginName: p}
	}
}

var eventNames atomic.Int64

// createIn posts a new valid event to namespace, changed by edit, and returns the response.
func (e *env) createIn(namespace string, edit func(map[string]any), header ...string) response {
	e.t.Helper()
	ev := sample(fmt.Sprintf("ev-%d", eventNames.Add(1)))
	ev["regarding"].(map[string]any)["namespace"] = namespace
	if edit != nil {
		edit(ev)
	}
	return e.do("POST", "/apis/events.orch.io/v1/namespaces/"+namespace+"/events", ev, header...)
}

// tally counts creates answered 201 and 429, and remembers the refusals' messages.
type tally struct {
	accepted, refused int
	messages          []string
}

func (tl *tally) add(t *testing.T, r response) {
	t.Helper()
	switch r.code {
	case http.StatusCreated, http.StatusOK:
		tl.accepted++
	case http.StatusTooManyRequests:
		s := r.expectStatus(t, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
		if got := r.header.Get("Retry-After"); got != "1" {
			t.Fatalf("429 with Retry-After %q, want 1", got)
		}
		tl.refused++
		tl.messages = append(tl.messages, s.Message)
	default:
		t.Fatalf("answer %d %s, want 201 or 429", r.code, r.body)
	}
}

func (tl tally) check(t *testing.T, what string, accepted, refused int, message string) {
	t.Helper()
	if tl.accepted != accepted || tl.refused != refused {
		t.Fatalf("%s: %d accepted, %d refused; want %d and %d (%q)", what, tl.accepted, tl.refused, accepted, refused, tl.messages)
	}
	for _, m := range tl.messages {
		if m != message {
			t.Fatalf("%s: refusal %q, want %q", what, m, message)
		}
	}
}

func (e *env) creates(n int, namespace string, edit func(map[string]any), header ...string) tally {
	e.t.Helper()
	var tl tally
	for range n {
		tl.add(e.t, e.createIn(namespace, edit, header...))
	}
	return tl
}

const refusedServer = "Too many requests: limit reached on type Server for key "

// The server bucket holds burst tokens and gains qps a second, never more than burst: the
// counts follow the mock clock exactly.
func TestEventRateLimitServer(t *testing.T) {
	e := newEnv(t, withEventRateLimit(t, `[{"type":"Server","qps":2,"burst":5}]`))
	e.creates(8, "default", nil).check(t, "a burst", 5, 3, refusedServer)
	// Namespaces share the one server bucket.
	e.creates(2, "orch-system", nil).check(t, "another namespace", 0, 2, refusedServer)
	e.clock.Add(time.Second)
	e.creates(3, "default", nil).check(t, "after 1s", 2, 1, refusedServer)
	e.clock.Add(500 * time.Millisecond)
	e.creates(2, "default", nil).check(t, "after 0.5s", 1, 1, refusedServer)
	e.clock.Add(time.Hour)
	e.creates(7, "default", nil).check(t, "after an hour", 5, 2, refusedServer)
}

// Each namespace has its own bucket, and a bucket the LRU evicts comes back full.
func TestEventRateLimitNamespace(t *testing.T) {
	const limit = `{"type":"Namespace","qps":1,"burst":2%s}`
	refused := func(ns string) string { return "Too many requests: limit reached on type Namespace for key " + ns }

	e := newEnv(t, withEventRateLimit(t, "["+fmt.Sprintf(limit, "")+"]"))
	e.creates(3, "default", nil).check(t, "default", 2, 1, refused("default"))
	e.creates(3, "orch-system", nil).check(t, "orch-system", 2, 1, refused("orch-system"))
	e.creates(1, "default", nil).check(t, "default again", 0, 1, refused("default"))
	e.clock.Add(time.Second)
	e.creates(2, "default", nil).check(t, "default after 1s", 1, 1, refused("default"))

	e = newEnv(t, withEventRateLimit(t, "["+fmt.Sprintf(limit, `,"cacheSize":1`)+"]"))
	e.creates(3, "default", nil).check(t, "default, cache of 1", 2, 1, refused("default"))
	e.creates(1, "orch-system", nil).check(t, "orch-system evicts default", 1, 0, "")
	e.creates(3, "default", nil).check(t, "default evicted, so full again", 2, 1, refused("default"))
}

// Each user has a bucket; anonymous requests share system:anonymous's.
func TestEventRateLimitUser(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("alice-token,alice,u-1\nbob-token,bob,u-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := authn.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withEventRateLimit(t, `[{"type":"User","qps":1,"burst":3}]`), func(c *Config) {
		c.Authenticator = authn.Union(tokens, authn.Anonymous())
	})
	refused := func(user string) string { return "Too many requests: limit reached on type User for key " + user }
	e.creates(4, "default", nil, "Authorization", "Bearer alice-token").check(t, "alice", 3, 1, refused("alice"))
	e.creates(4, "orch-system", nil, "Authorization", "Bearer bob-token").check(t, "bob", 3, 1, refused("bob"))
	e.creates(5, "default", nil).check(t, "anonymous", 3, 2, refused("system:anonymous"))
	e.clock.Add(2 * time.Second)
	e.creates(3, "default", nil, "Authorization", "Bearer alice-token").check(t, "alice after 2s", 2, 1, refused("alice"))
}

// Events about the same object share a bucket; another object, or the same name with another
// uid, has its own. (The key's source part, deprecatedSource, is always empty: validation
// keeps it unset on events.orch.io/v1 events.)
func TestEventRateLimitSourceAndObject(t *testing.T) {
	e := newEnv(t, withEventRateLimit(t, `[{"type":"SourceAndObject","qps":1,"burst":2}]`))
	regarding := func(name string) func(map[string]any) {
		return func(ev map[string]any) {
			ev["regarding"] = map[string]any{"kind": "Pod", "namespace": ev["regarding"].(map[string]any)["namespace"], "name": name, "uid": "uid-" + name, "apiVersion": "v1"}
		}
	}
	refused := func(key string) string {
		return "Too many requests: limit reached on type SourceAndObject for key " + key
	}
	e.creates(3, "default", regarding("web-0")).check(t, "web-0", 2, 1, refused("Poddefaultweb-0uid-web-0v1"))
	e.creates(3, "orch-system", regarding("web-1")).check(t, "web-1", 2, 1, refused("Podorch-systemweb-1uid-web-1v1"))
	recreated := func(ev map[string]any) {
		regarding("web-0")(ev)
		ev["regarding"].(map[string]any)["uid"] = "uid-web-0-again"
	}
	e.creates(3, "default", recreated).check(t, "web-0 recreated", 2, 1, refused("Poddefaultweb-0uid-web-0-againv1"))
	e.creates(1, "default", regarding("web-0")).check(t, "web-0 still", 0, 1, refused("Poddefaultweb-0uid-web-0v1"))
}

// Creates, updates (PUT, and PATCH, which is an update), and dry runs take tokens; reads,
// deletes and events that fail validation do not.
func TestEventRateLimitOperations(t *testing.T) {
	e := newEnv(t, withEventRateLimit(t, `[{"type":"Server","qps":1,"burst":4}]`))
	var tl tally
	tl.add(t, e.do("POST", eventsPath, sample("a")))
	next := sample("a")
	next["series"] = map[string]any{"count": 2, "lastObservedTime": "2026-11-21T23:04:57.000000Z"}
	tl.add(t, e.do("PUT", eventsPath+"/a", next))
	tl.add(t, e.do("PATCH", eventsPath+"/a", `{"series":{"count":3}}`, "Content-Type", "application/merge-patch+json"))
	tl.add(t, e.do("POST", eventsPath+"?dryRun=All", sample("b")))
	tl.check(t, "create, update, patch, dry run", 4, 0, "")

	invalid := sample("c")
	delete(invalid, "reportingController")
	e.do("POST", eventsPath, invalid).expectStatus(t, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	if r := e.do("GET", eventsPath+"/a", nil); r.code != http.StatusOK {
		t.Fatalf("get: %d %s", r.code, r.body)
	}
	if r := e.do("DELETE", eventsPath+"/a", nil); r.code != http.StatusOK {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	tl = tally{}
	tl.add(t, e.do("POST", eventsPath, sample("d")))
	tl.add(t, e.do("PUT", eventsPath+"/d", sample("d")))
	tl.check(t, "the bucket empty", 0, 2, refusedServer)

	e.clock.Add(time.Second)
	e.do("POST", eventsPath, invalid).expectStatus(t, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	e.creates(2, "default", nil).check(t, "after 1s and an invalid event", 1, 1, refusedServer)
}

// Every limit is charged for every request, even one another limit refuses, and the answer is
// the last refusal in the configuration's order, as in Kubernetes.
func TestEventRateLimitSeveralLimits(t *testing.T) {
	e := newEnv(t, withEventRateLimit(t, `[{"type":"Server","qps":1,"burst":10},{"type":"Namespace","qps":1,"burst":2}]`))
	var got []string
	for _, ns := range []string{"ns-1", "ns-2", "ns-3", "ns-4"} {
		for range 3 {
			r := e.createIn(ns, nil)
			switch r.code {
			case http.StatusCreated:
				got = append(got, "ok")
			case http.StatusTooManyRequests:
				msg := r.status(t).Message
				got = append(got, strings.TrimPrefix(msg, "Too many requests: limit reached on type "))
			default:
				t.Fatalf("%d %s", r.code, r.body)
			}
		}
	}
	want := []string{
		"ok", "ok", "Namespace for key ns-1",
		"ok", "ok", "Namespace for key ns-2",
		"ok", "ok", "Namespace for key ns-3",
		"ok", "Server for key ", "Namespace for key ns-4",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("answers\n%q\nwant\n%q", got, want)
	}
}

// Eight clients creating at once get exactly the server's burst, then exactly what qps refills:
// the bucket holds under concurrency.
func TestEventRateLimitServerConcurrentClients(t *testing.T) {
	e := newEnv(t, withEventRateLimit(t, `[{"type":"Server","qps":5,"burst":50}]`))
	round := func(perClient int) (accepted, refused int64) {
		var ok, tooMany atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for c := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perClient {
					body, _ := json.Marshal(sample(fmt.Sprintf("c%d-%d-%d", c, i, eventNames.Add(1))))
					code, err := post(e.client, e.url+eventsPath, body)
					switch {
					case err != nil:
						errs <- err
						return
					case code == http.StatusCreated:
						ok.Add(1)
					case code == http.StatusTooManyRequests:
						tooMany.Add(1)
					default:
						errs <- fmt.Errorf("answer %d", code)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		return ok.Load(), tooMany.Load()
	}
	if ok, refused := round(20); ok != 50 || refused != 110 {
		t.Fatalf("first round: %d accepted, %d refused; want 50 and 110", ok, refused)
	}
	e.clock.Add(2 * time.Second)
	if ok, refused := round(5); ok != 10 || refused != 30 {
		t.Fatalf("after 2s: %d accepted, %d refused; want 10 and 30", ok, refused)
	}
}

func post(c *http.Client, url string, body []byte) (int, error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// BenchmarkEventRateLimitServer drives creates from 8 concurrent clients through the handler;
// the clock stands still, so the server limit admits its burst and nothing more, however many
// requests arrive.
func BenchmarkEventRateLimitServer(b *testing.B) {
	const burst = 100
	srv, _, _ := startServer(b, withEventRateLimit(b, fmt.Sprintf(`[{"type":"Server","qps":10,"burst":%d}]`, burst)))
	client, url := srv.Client(), srv.URL+eventsPath
	body, _ := json.Marshal(sample("bench"))
	var ok, tooMany atomic.Int64
	// RunParallel starts parallelism × GOMAXPROCS clients: at least 8.
	b.SetParallelism(max(1, (8+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var ev map[string]any
			_ = json.Unmarshal(body, &ev)
			ev["metadata"] = map[string]any{"generateName": "bench-"}
			data, _ := json.Marshal(ev)
			code, err := post(client, url, data)
			switch {
			case err != nil:
				b.Error(err)
				return
			case code == http.StatusCreated:
				ok.Add(1)
			case code == http.StatusTooManyRequests:
				tooMany.Add(1)
			default:
				b.Errorf("answer %d", code)
				return
			}
		}
	})
	b.StopTimer()
	if ok.Load() > burst {
		b.Fatalf("%d creates accepted, over the burst of %d", ok.Load(), burst)
	}
	b.ReportMetric(float64(ok.Load()), "accepted")
	b.ReportMetric(float64(tooMany.Load()), "refused")
}
