package conformance

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"

	"orch.io/orch/conformance/catalog"
	"orch.io/orch/conformance/report"
	"orch.io/orch/conformance/target"
)

// A target without the API server runs no Event API scenario, and none of them counts as passed.
func TestMissingComponentIsNotApplicable(t *testing.T) {
	scenarios, err := catalog.LoadFeatures(featuresDir)
	if err != nil {
		t.Fatal(err)
	}
	tgt := target.New(&target.Profile{Name: "agent only", Agent: &target.AgentProfile{}}, "", t.TempDir())
	rec := report.NewRecorder(io.Discard, scenarios)
	suite := godog.TestSuite{
		ScenarioInitializer: InitializeScenario(tgt, rec),
		Options:             &godog.Options{Format: "pretty", Output: io.Discard, Paths: []string{filepath.Join(featuresDir, "event_api.feature")}, Strict: true},
	}
	if status := suite.Run(); status != 0 {
		t.Fatalf("godog exited %d", status)
	}
	if len(rec.Outcomes) == 0 {
		t.Fatal("no outcomes recorded")
	}
	for _, o := range rec.Outcomes {
		if o.Status != report.StatusNotApplicable {
			t.Errorf("%s: %s, want not applicable", o.Ref, o.Status)
		}
	}
}

// A rule the profile marks not applicable is not run, and its scenarios carry the profile's reason.
func TestProfileNotApplicableReason(t *testing.T) {
	scenarios, err := catalog.LoadFeatures(featuresDir)
	if err != nil {
		t.Fatal(err)
	}
	const reason = "the peer cannot be asked"
	tgt := target.New(&target.Profile{Name: "no pretty", NotApplicable: map[string]string{"rule:event.op.pretty": reason}}, "", t.TempDir())
	rec := report.NewRecorder(io.Discard, scenarios)
	suite := godog.TestSuite{
		ScenarioInitializer: InitializeScenario(tgt, rec),
		Options:             &godog.Options{Format: "pretty", Output: io.Discard, Paths: []string{filepath.Join(featuresDir, "event_api.feature")}, Tags: "@rule:event.op.pretty", Strict: true},
	}
	if status := suite.Run(); status != 0 {
		t.Fatalf("godog exited %d", status)
	}
	if len(rec.Outcomes) == 0 {
		t.Fatal("no outcomes recorded")
	}
	for _, o := range rec.Outcomes {
		if o.Status != report.StatusNotApplicable || o.Detail != reason {
			t.Errorf("%s: %s (%s), want not applicable (%s)", o.Ref, o.Status, o.Detail, reason)
		}
	}
}

// An agent without a start-only mode is started for real: its running text accepts the options
// (and it is stopped), an exit before it refuses them with its own status and output.
func TestStartAndStopJudgesByRunningOrExit(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.sh")
	script := `for a in "$@"; do
  case $a in --event-qps=-1) echo "invalid configuration: eventRecordQPS (--event-qps) must not be negative" >&2; exit 1 ;; esac
done
echo "agent is running"
exec sleep 60
`
	if err := os.WriteFile(agent, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &target.Profile{Name: "started", Agent: &target.AgentProfile{Command: []string{"sh", agent}, StartOnlyAbsent: "none",
		Run: []string{"--serve=false"}, RunningText: "agent is running"}}
	for _, tc := range []struct {
		args string
		code int
		step func(w *World) error
	}{
		{"--event-qps=5", 0, (*World).exitsSuccessfully},
		{"--event-qps=-1", 1, func(w *World) error { return w.refusesNaming("--event-qps") }},
	} {
		w := &World{t: target.New(p, "", dir), dir: dir}
		start := time.Now()
		if err := w.agentStart(tc.args); err != nil {
			t.Fatal(err)
		}
		if w.result.Code != tc.code {
			t.Errorf("%s: exit %d, want %d:\n%s", tc.args, w.result.Code, tc.code, w.result.Output())
		}
		if err := tc.step(w); err != nil {
			t.Errorf("%s: %v", tc.args, err)
		}
		if time.Since(start) > 20*time.Second {
			t.Errorf("%s: the running agent was not stopped once it ran", tc.args)
		}
	}
	// Without run arguments the scenario is not applicable, with the profile's reason.
	p.Agent.Run = nil
	var reason string
	w := &World{t: target.New(p, "", dir), dir: dir, notApplicable: func(r string) error { reason = r; return godog.ErrSkip }}
	if err := w.agentStart("--event-qps=5"); err != godog.ErrSkip || reason != "none" {
		t.Errorf("without run: %v, reason %q", err, reason)
	}
}

// A checker that takes a file it should refuse, printing nothing, fails the scenario with a message
// saying so and giving the file, so the implementer can run the checker on it by hand.
func TestCheckerFailureGivesTheFile(t *testing.T) {
	dir := t.TempDir()
	p := &target.Profile{Name: "silent", ConfigCheck: &target.ConfigCheckProfile{Command: []string{"true"}, APIVersion: "v"}}
	const file = "kind: TracingConfiguration\nendpoint: localhost\n"
	w := &World{t: target.New(p, "", dir), dir: dir, docRaw: file}
	if err := w.checkConfig(); err != nil {
		t.Fatal(err)
	}
	err := w.refused()
	if err == nil {
		t.Fatal("an exit 0 passed for a refusal")
	}
	for _, want := range []string{"exit 0", "(no output)", "on the file:\n" + file} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the failure lacks %q:\n%v", want, err)
		}
	}
}

// A kubelet's event broadcaster line gives the event's type, reason and object; a namespaced
// object's name follows its namespace, a node's stands alone; other lines are no events.
func TestKlogEvent(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`I1129 08:32:02.433270    2685 event.go:389] "Event occurred" object="default/web-node-conformance" fieldPath="spec.containers{app}" kind="Pod" apiVersion="v1" type="Normal" reason="Pulled" message="Container image \"busybox:1.36\" already present on machine"`,
			"Normal Pulled Pod web-node-conformance"},
		{`W1129 08:32:05.000001    2685 event.go:389] "Event occurred" object="node-conformance" fieldPath="" kind="Node" apiVersion="" type="Warning" reason="FreeDiskSpaceFailed" message="Failed to garbage collect required amount of images."`,
			"Warning FreeDiskSpaceFailed Node node-conformance"},
		{`I1129 08:32:02.433270    2685 kubelet.go:2470] "SyncLoop ADD" source="file" pods=["default/web-node-conformance"]`, ""},
	} {
		e, ok := klogEvent(c.line)
		got := ""
		if ok {
			got = strings.Join([]string{e.Type, e.Reason, e.Regarding.Kind, e.Regarding.Name}, " ")
		}
		if got != c.want {
			t.Errorf("klogEvent(%.60q...) = %q, want %q", c.line, got, c.want)
		}
	}
}
