package prober

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/utils/exec"

	"orch.io/orch/components/orchlet/pods/calls"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// script answers exec probes with the next of its results: true passes, false exits 1.
type script struct{ results []bool }

func (s *script) ExecSync(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
	ok := s.results[0]
	s.results = s.results[1:]
	if ok {
		return nil, nil, nil
	}
	return []byte("not yet"), nil, utilexec.CodeExitError{Err: fmt.Errorf("exit 1"), Code: 1}
}

type recorder struct{ notes []string }

func (r *recorder) Eventf(_ *corev1.ObjectReference, _, reason, _, format string, args ...any) {
	r.notes = append(r.notes, reason+": "+fmt.Sprintf(format, args...))
}

func probe(failure, success int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
		PeriodSeconds: 5, FailureThreshold: failure, SuccessThreshold: success}
}

// TestProbeRules runs a probe of each kind through a series of results, each row a rule of the
// kubelet's prober worker: what is published when, what is asked of the pod's sync, and when the
// probe is due again.
func TestProbeRules(t *testing.T) {
	type step struct {
		ok      bool
		changed bool // the published result changed
		sync    bool
		next    bool // the probe is due again, a period later
		ready   bool // after the step
		started bool
		kill    Type
		waits   bool // the probe does not run
	}
	cases := []struct {
		name      string
		container func() *corev1.Container
		probe     Type
		init      bool
		steps     []step
		note      string // the Killing note asked for
	}{
		{name: "readiness starts failed and is published ready on its first success",
			container: func() *corev1.Container { return &corev1.Container{Name: "c", ReadinessProbe: probe(3, 1)} },
			probe:     Readiness,
			steps: []step{
				{ok: true, changed: true, sync: true, next: true, ready: true, started: true},
				{ok: true, next: true, ready: true, started: true},
			}},
		{name: "readiness is published failed only after failureThreshold failures in a row, and never kills",
			container: func() *corev1.Container { return &corev1.Container{Name: "c", ReadinessProbe: probe(2, 1)} },
			probe:     Readiness,
			steps: []step{
				{ok: true, changed: true, sync: true, next: true, ready: true, started: true},
				{ok: false, next: true, ready: true, started: true},
				{ok: false, changed: true, sync: true, next: true, started: true},
				{ok: false, next: true, started: true},
			}},
		{name: "successThreshold successes in a row make it ready again",
			container: func() *corev1.Container { return &corev1.Container{Name: "c", ReadinessProbe: probe(1, 2)} },
			probe:     Readiness,
			steps: []step{
				{ok: true, next: true, started: true},
				{ok: false, next: true, started: true},
				{ok: true, next: true, started: true},
				{ok: true, changed: true, sync: true, next: true, ready: true, started: true},
			}},
		{name: "a liveness failure past its threshold asks for a kill and holds",
			container: func() *corev1.Container { return &corev1.Container{Name: "c", LivenessProbe: probe(2, 1)} },
			probe:     Liveness,
			steps: []step{
				{ok: false, next: true, ready: true, started: true},
				{ok: false, changed: true, sync: true, ready: true, started: true, kill: Liveness},
			},
			note: "Container c failed liveness probe, will be restarted"},
		{name: "a sidecar's kill note says init container",
			container: func() *corev1.Container { return &corev1.Container{Name: "side", LivenessProbe: probe(1, 1)} },
			probe:     Liveness,
			init:      true,
			steps: []step{
				{ok: false, changed: true, sync: true, ready: true, started: true, kill: Liveness},
			},
			note: "Init container side failed liveness probe"},
		{name: "liveness waits for the startup probe without running",
			container: func() *corev1.Container {
				return &corev1.Container{Name: "c", StartupProbe: probe(3, 1), LivenessProbe: probe(1, 1)}
			},
			probe: Liveness,
			steps: []step{{waits: true, next: true}},
		},
		{name: "the startup probe runs until it passes once, then never again",
			container: func() *corev1.Container { return &corev1.Container{Name: "c", StartupProbe: probe(3, 1)} },
			probe:     Startup,
			steps: []step{
				{ok: false, next: true},
				{ok: true, changed: true, sync: true, ready: true, started: true},
			}},
		{name: "a startup probe failing its threshold kills",
			container: func() *corev1.Container { return &corev1.Container{Name: "c", StartupProbe: probe(1, 1)} },
			probe:     Startup,
			steps: []step{
				{ok: false, changed: true, sync: true, kill: Startup},
			},
			note: "Container c failed startup probe, will be restarted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			mock.Set(t0)
			rt := &script{}
			for _, s := range tc.steps {
				if !s.waits {
					rt.results = append(rt.results, s.ok)
				}
			}
			p := New(Options{Clock: mock, Calls: calls.New(mock, time.Minute), Runtime: rt, Recorder: &recorder{}})
			c := tc.container()
			tg := Target{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}, Container: c, Init: tc.init}
			var s Container
			s.Watch("id-1")
			for i, st := range tc.steps {
				out := p.Probe(context.Background(), tg, &s, tc.probe)
				if out.Changed != st.changed || out.Sync != st.sync || (out.Sync && !out.SyncAt.Equal(mock.Now())) {
					t.Errorf("step %d: %+v, want changed %t and sync %t now", i+1, out, st.changed, st.sync)
				}
				if want := mock.Now().Add(5 * time.Second); st.next != !out.Next.IsZero() || st.next && !out.Next.Equal(want) {
					t.Errorf("step %d: next %v, want due again %t at %v", i+1, out.Next, st.next, want)
				}
				if s.Ready(c) != st.ready || s.Started(c) != st.started || s.Kill != st.kill {
					t.Errorf("step %d: ready %t started %t kill %v, want %t %t %v", i+1, s.Ready(c), s.Started(c), s.Kill, st.ready, st.started, st.kill)
				}
				mock.Add(5 * time.Second)
			}
			if s.KillNote != tc.note {
				t.Errorf("kill note %q, want %q", s.KillNote, tc.note)
			}
			if len(rt.results) != 0 {
				t.Errorf("%d results left unprobed", len(rt.results))
			}
			if s.Kill != None {
				if out := p.Probe(context.Background(), tg, &s, tc.probe); out != (Outcome{}) {
					t.Errorf("a probe of an instance to be killed: %+v, want nothing", out)
				}
			}
		})
	}
}

// The first probe of an instance is initialDelaySeconds after it started, or at once.
func TestFirstProbe(t *testing.T) {
	pr := &corev1.Probe{InitialDelaySeconds: 10}
	if got := FirstProbe(pr, t0, t0.Add(time.Second)); !got.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("first probe %v, want 10s after the start", got)
	}
	if got := FirstProbe(pr, t0, t0.Add(time.Minute)); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("first probe %v, want now when the delay passed", got)
	}
}
