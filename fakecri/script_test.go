package fakecri

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestExampleScript(t *testing.T) {
	s, err := LoadScript("examples/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 42 || s.Node.RuntimeName != "containerd" || len(s.Images) != 4 || len(s.Containers) != 6 ||
		len(s.Exec) != 3 || len(s.Faults) != 4 {
		t.Fatalf("%+v", s)
	}
	if s.Images[0].PullDuration.D() != 12*time.Second || s.Images[0].Size.Value() != 70*mi {
		t.Fatalf("%+v", s.Images[0])
	}
	if s.Node.ImageFs.Capacity.Value() != 20*gi {
		t.Fatal("capacity")
	}
	m := s.Containers[1].Usage.Memory
	if m.Ramp == nil || m.Ramp.PerSecond.Value() != 2*mi {
		t.Fatalf("%+v", m)
	}
	if s.Containers[5].Usage.PIDs.Constant.Value() != 12 || len(s.Containers[5].Usage.Disk.Steps) != 3 {
		t.Fatal("shorthand curves")
	}
	// renders and reads back the same
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := ParseScript(y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(s2)
	if string(a) != string(b) {
		t.Fatalf("round trip differs:\n%s\n%s", a, b)
	}
	if _, err := New(Options{Script: s}); err != nil {
		t.Fatal(err)
	}
}

func TestScriptErrors(t *testing.T) {
	for _, bad := range []string{
		"nodes: {}",                                // unknown field
		"images: [{size: 1Gi}]",                    // match missing
		"images: [{match: x, size: lots}]",         // bad quantity
		"images: [{match: x, pullDuration: soon}]", // bad duration
		"images: [{match: x, digest: sha256:abc}]", // bad digest
		"faults: [{method: Nope, latency: 1s}]",    // no such method
		"faults: [{method: Status, error: {code: Teapot}}]",
		"faults: [{method: Status, probability: 2, error: {code: Internal}}]",
		"faults: [{method: Status, hang: true, error: {code: Internal}}]",
		"node: {cgroupDriver: openrc}",
		"node: {podCIDR: 10.0.0.0/31}",
		"node: {containerFs: tmpfs}",
		"node: {imageFs: {capacity: 1Gi, used: 2Gi}}",
		"containers: [{match: {name: x}, usage: {memory: {ramp: {from: 1Mi}}}}]",
		"containers: [{match: {name: x}, usage: {cpu: {constant: 1, steps: [{at: 0s, value: 1}]}}}]",
		"containers: [{match: {name: x}, exit: {after: -1s}}]",
	} {
		if _, err := ParseScript([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if s, err := ParseScript(nil); err != nil || !reflect.DeepEqual(s, &Script{}) {
		t.Fatal(s, err)
	}
}

func TestControlAPI(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.rt.ControlHandler(ControlOptions{Mock: f.mock}))
	defer srv.Close()
	do := func(method, path, body string, want int) string {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	do("PUT", "/v1/script", "containers: [{match: {name: app}, exit: {after: 1m, code: 4}}]", 204)
	do("PUT", "/v1/script", "containers: [{match: {nme: app}}]", 400)
	if y := do("GET", "/v1/script", "", 200); !strings.Contains(y, "code: 4") {
		t.Fatal(y)
	}
	_, c := f.run("p", "app", "busybox", 0)
	var cs ClockState
	json.Unmarshal([]byte(do("GET", "/v1/clock", "", 200)), &cs)
	if !cs.Manual || !cs.Idle || cs.InFlight != 0 || !cs.NextWakeup.Equal(t0.Add(time.Minute)) {
		t.Fatalf("%+v", cs)
	}
	cs = ClockState{}
	json.Unmarshal([]byte(do("POST", "/v1/clock/advance?to=next", "", 200)), &cs)
	if !cs.Now.Equal(t0.Add(time.Minute)) || !cs.NextWakeup.IsZero() {
		t.Fatalf("%+v", cs)
	}
	if st := f.status(c); st.ExitCode != 4 {
		t.Fatal(st)
	}
	json.Unmarshal([]byte(do("POST", "/v1/clock/advance?by=90s", "", 200)), &cs)
	if !cs.Now.Equal(t0.Add(150 * time.Second)) {
		t.Fatal(cs.Now)
	}
	do("POST", "/v1/clock/advance?to=2020-01-01T00:00:00Z", "", 400)
	do("POST", "/v1/clock/advance", "", 400)

	var calls struct {
		Calls   []Call `json:"calls"`
		LastSeq uint64 `json:"lastSeq"`
	}
	json.Unmarshal([]byte(do("GET", "/v1/calls?method=*Container*&since=1", "", 200)), &calls)
	if len(calls.Calls) != 3 || calls.Calls[0].Method != "CreateContainer" || calls.Calls[2].Method != "ContainerStatus" {
		t.Fatalf("%+v", calls)
	}
	do("DELETE", "/v1/calls", "", 204)
	json.Unmarshal([]byte(do("GET", "/v1/calls", "", 200)), &calls)
	if len(calls.Calls) != 0 || calls.LastSeq != 5 {
		t.Fatalf("%+v", calls)
	}

	var st State
	json.Unmarshal([]byte(do("GET", "/v1/state", "", 200)), &st)
	if len(st.Containers) != 1 || st.Containers[0].State != "CONTAINER_EXITED" || len(st.Images) != 2 || len(st.Filesystems) != 2 {
		t.Fatalf("%+v", st)
	}
	var fs []FilesystemStats
	json.Unmarshal([]byte(do("GET", "/v1/fs", "", 200)), &fs)
	if fs[0].Name != "imagefs" || fs[0].UsedBytes == 0 || fs[0].CapacityBytes != 100*gi {
		t.Fatalf("%+v", fs)
	}
	_, c2 := f.run("q", "other", "busybox", 0)
	do("POST", "/v1/containers/"+c2+"/kill?code=1&reason=Error", "", 204)
	do("POST", "/v1/containers/"+c2+"/kill", "", 409)
	do("POST", "/v1/containers/nope/kill", "", 404)
	if s := f.status(c2); s.ExitCode != 1 || s.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatal(s)
	}
	do("GET", "/healthz", "", 200)

	// the wall clock only reports
	wall, _ := New(Options{})
	ws := httptest.NewServer(wall.ControlHandler(ControlOptions{}))
	defer ws.Close()
	resp, _ := http.Post(ws.URL+"/v1/clock/advance?by=1s", "", nil)
	if resp.StatusCode != http.StatusConflict {
		t.Fatal(resp.Status)
	}
}

func TestParseImageRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                                       "docker.io/library/busybox:latest",
		"library/busybox:1.36":                          "docker.io/library/busybox:1.36",
		"docker.io/nginx":                               "docker.io/library/nginx:latest",
		"index.docker.io/acme/app:v2":                   "docker.io/acme/app:v2",
		"registry.k8s.io/pause:3.10":                    "registry.k8s.io/pause:3.10",
		"localhost:5000/x/y":                            "localhost:5000/x/y:latest",
		"quay.io/a/b@sha256:" + strings.Repeat("0", 64): "quay.io/a/b@sha256:" + strings.Repeat("0", 64),
	} {
		r, err := parseImageRef(in)
		if err != nil || r.String() != want {
			t.Errorf("%s: %v %v", in, r, err)
		}
	}
	for _, bad := range []string{"", "UPPER/case", "a b", "x@sha256:12", "x:bad:tag:"} {
		if _, err := parseImageRef(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
