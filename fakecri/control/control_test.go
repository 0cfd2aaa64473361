package control

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/fakecritest/fixture"
)

func TestControlAPI(t *testing.T) {
	f := fakecritest.NewFixture(t, nil)
	srv := httptest.NewServer(Handler(f.RT, Options{Mock: f.Mock}))
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
	_, c := f.Run("p", "app", "busybox", 0)
	var cs ClockState
	json.Unmarshal([]byte(do("GET", "/v1/clock", "", 200)), &cs)
	if !cs.Manual || !cs.Idle || cs.InFlight != 0 || !cs.NextWakeup.Equal(fixture.Epoch.Add(time.Minute)) {
		t.Fatalf("%+v", cs)
	}
	cs = ClockState{}
	json.Unmarshal([]byte(do("POST", "/v1/clock/advance?to=next", "", 200)), &cs)
	if !cs.Now.Equal(fixture.Epoch.Add(time.Minute)) || !cs.NextWakeup.IsZero() {
		t.Fatalf("%+v", cs)
	}
	if st := f.Status(c); st.ExitCode != 4 {
		t.Fatal(st)
	}
	json.Unmarshal([]byte(do("POST", "/v1/clock/advance?by=90s", "", 200)), &cs)
	if !cs.Now.Equal(fixture.Epoch.Add(150 * time.Second)) {
		t.Fatal(cs.Now)
	}
	do("POST", "/v1/clock/advance?to=2020-01-01T00:00:00Z", "", 400)
	do("POST", "/v1/clock/advance", "", 400)

	var calls struct {
		Calls   []calllog.Call `json:"calls"`
		LastSeq uint64         `json:"lastSeq"`
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

	var st fakecri.State
	json.Unmarshal([]byte(do("GET", "/v1/state", "", 200)), &st)
	if len(st.Containers) != 1 || st.Containers[0].State != "CONTAINER_EXITED" || len(st.Images) != 2 || len(st.Filesystems) != 2 {
		t.Fatalf("%+v", st)
	}
	var fs []fakecri.FilesystemStats
	json.Unmarshal([]byte(do("GET", "/v1/fs", "", 200)), &fs)
	if fs[0].Name != "imagefs" || fs[0].UsedBytes == 0 || fs[0].CapacityBytes != 100<<30 {
		t.Fatalf("%+v", fs)
	}
	_, c2 := f.Run("q", "other", "busybox", 0)
	do("POST", "/v1/containers/"+c2+"/kill?code=1&reason=Error", "", 204)
	do("POST", "/v1/containers/"+c2+"/kill", "", 409)
	do("POST", "/v1/containers/nope/kill", "", 404)
	if s := f.Status(c2); s.ExitCode != 1 || s.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatal(s)
	}
	do("GET", "/healthz", "", 200)

	// the wall clock only reports
	wall, _ := fakecri.New(fakecri.Options{})
	ws := httptest.NewServer(Handler(wall, Options{}))
	defer ws.Close()
	resp, _ := http.Post(ws.URL+"/v1/clock/advance?by=1s", "", nil)
	if resp.StatusCode != http.StatusConflict {
		t.Fatal(resp.Status)
	}
}
