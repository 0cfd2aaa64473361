package peerkubelet

import (
	"strings"
	"testing"
)

func TestErrorLines(t *testing.T) {
	stale := func(id string) bool { return id == "bbbb" }
	for _, tc := range []struct {
		name, line string
		reported   bool // an error line at all
		hostFault  bool
	}{
		{name: "info line", line: `I1125 13:33:26.195870   27219 server.go:1258] "Started kubelet"`},
		{name: "warning line", line: `W1125 13:33:26.195870   27219 server.go:1258] "whatever"`},
		{name: "rlimit", reported: true, hostFault: true,
			line: `E1125 13:33:26.195870   27219 server.go:1258] "Failed to set rlimit on max file handles" err="operation not permitted"`},
		{name: "image GC first round", reported: true, hostFault: true,
			line: `E1125 13:33:26.232906   27219 kubelet.go:1615] "Image garbage collection failed once. Stats initialization may not have completed yet" err="invalid capacity 0 on image filesystem"`},
		{name: "image GC failing every round is fakecri's", reported: true,
			line: `E1125 13:38:26.232906   27219 kubelet.go:1611] "Image garbage collection failed multiple times in a row" err="invalid capacity 0 on image filesystem"`},
		{name: "runtime status not checked yet, at start", reported: true, hostFault: true,
			line: `E1125 13:37:33.835474    1097 kubelet.go:2452] "Skipping pod synchronization" err="container runtime status check may not have completed yet"`},
		{name: "pleg not healthy later is fakecri's", reported: true,
			line: `E1125 13:33:26.201608   27219 kubelet.go:2452] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0s ago"`},
		{name: "stale id", reported: true, hostFault: true,
			line: `E1125 13:33:26.787213   27219 log.go:32] "ContainerStatus from runtime service failed" err="rpc error: code = NotFound desc = not found" containerID="bbbb"`},
		{name: "NotFound for an id fakecri made", reported: true,
			line: `E1125 13:33:26.787213   27219 log.go:32] "ContainerStatus from runtime service failed" err="rpc error: code = NotFound desc = not found" containerID="aaaa"`},
		{name: "anything else", reported: true,
			line: `E1125 13:33:26.787213   27219 cri_stats_provider.go:1] "Failed to get the info of the filesystem with mountpoint" mountpoint="/nowhere"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ErrorLines(strings.NewReader(tc.line+"\n"), stale)
			if err != nil {
				t.Fatal(err)
			}
			if (len(got) == 1) != tc.reported {
				t.Fatalf("got %+v, reported want %v", got, tc.reported)
			}
			if tc.reported && (got[0].Reason != "") != tc.hostFault {
				t.Fatalf("reason %q, host fault want %v", got[0].Reason, tc.hostFault)
			}
		})
	}
}

func TestStaleIDs(t *testing.T) {
	status := func(id, code string) Call {
		return Call{Method: "ContainerStatus", Request: "container_id=" + id + " verbose=false", Code: code}
	}
	create := func(id string) Call { return Call{Method: "CreateContainer", Code: "OK", Response: id} }
	for _, tc := range []struct {
		name  string
		calls []Call
		want  []string
	}{
		{name: "never created", calls: []Call{status("a", "NotFound")}, want: []string{"a"}},
		{name: "asked before a container of that id is created", calls: []Call{status("a", "NotFound"), create("a"), status("a", "OK")}, want: []string{"a"}},
		{name: "created, then not found: fakecri's", calls: []Call{create("a"), status("a", "NotFound")}},
		{name: "found", calls: []Call{create("a"), status("a", "OK")}},
		{name: "a failed create makes nothing", calls: []Call{{Method: "CreateContainer", Code: "Unknown", Response: "a"}, status("a", "NotFound")}, want: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := StaleIDs(tc.calls)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for _, id := range tc.want {
				if !got[id] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
