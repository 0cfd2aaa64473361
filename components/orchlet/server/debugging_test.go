package server

import (
	"net/http"
	"strings"
	"testing"
)

func TestDebuggingHandlers(t *testing.T) {
	const disabled = "Debug endpoints are disabled."
	tests := []struct {
		name       string
		debugging  bool
		readOnly   bool
		method     string
		path       string
		wantStatus int
		wantBody   string // exact; or a substring when prefixed by "~"
	}{
		{name: "logs", debugging: true, method: "GET", path: "/containerLogs/default/web/nginx", wantStatus: 200, wantBody: "line 1\nline 2\n"},
		{name: "logs of an unknown container", debugging: true, method: "GET", path: "/containerLogs/default/web/sidecar", wantStatus: 404, wantBody: "container default/web/sidecar not found"},
		{name: "negative tailLines", debugging: true, method: "GET", path: "/containerLogs/default/web/nginx?tailLines=-1", wantStatus: 400, wantBody: "~tailLines"},
		{name: "sinceSeconds with sinceTime", debugging: true, method: "GET", path: "/containerLogs/default/web/nginx?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", wantStatus: 400, wantBody: "~at most one of sinceTime or sinceSeconds"},
		{name: "logs: one stream needs the gate", debugging: true, method: "GET", path: "/containerLogs/default/web/nginx?stream=Stderr", wantStatus: 400, wantBody: `unable to return the given log stream: "Stderr". Please enable PodLogsQuerySplitStreams feature gate in orchlet`},
		{name: "logs: both streams without the gate", debugging: true, method: "GET", path: "/containerLogs/default/web/nginx?stream=All", wantStatus: 200, wantBody: "line 1\nline 2\n"},
		{name: "logs: an unknown stream", debugging: true, method: "GET", path: "/containerLogs/default/web/nginx?stream=stdin", wantStatus: 400, wantBody: `~stream: Unsupported value: "stdin"`},
		{name: "run answers the output", debugging: true, method: "POST", path: "/run/default/web/nginx?cmd=echo%20hi", wantStatus: 200, wantBody: "ran echo|hi"},
		{name: "run with the pod's uid", debugging: true, method: "POST", path: "/run/default/web/uid-web/nginx?cmd=ls", wantStatus: 200, wantBody: "ran ls"},
		{name: "run with another uid", debugging: true, method: "POST", path: "/run/default/web/uid-other/nginx?cmd=ls", wantStatus: 404},
		{name: "run is POST", debugging: true, method: "GET", path: "/run/default/web/nginx?cmd=ls", wantStatus: 405},
		{name: "exec without a stream", debugging: true, method: "POST", path: "/exec/default/web/nginx?command=ls", wantStatus: 400, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "exec in an unknown pod", debugging: true, method: "POST", path: "/exec/default/db/nginx?command=ls&output=1", wantStatus: 404, wantBody: "container default/db/nginx not found"},
		{name: "exec that is no upgrade", debugging: true, method: "POST", path: "/exec/default/web/nginx?command=ls&output=1", wantStatus: 400, wantBody: "Upgrade request required"},
		{name: "exec by GET that is no upgrade", debugging: true, method: "GET", path: "/exec/default/web/uid-web/nginx?command=ls&output=1", wantStatus: 400, wantBody: "Upgrade request required"},
		{name: "attach without a stream", debugging: true, method: "POST", path: "/attach/default/web/nginx", wantStatus: 400, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "attach in an unknown container", debugging: true, method: "POST", path: "/attach/default/web/db?output=1", wantStatus: 404},
		{name: "port-forward of another uid", debugging: true, method: "POST", path: "/portForward/default/web/uid-other", wantStatus: 404},
		{name: "exec is GET or POST", debugging: true, method: "PUT", path: "/exec/default/web/nginx?command=ls&output=1", wantStatus: 405},
		{name: "disabled: logs", method: "GET", path: "/containerLogs/default/web/nginx", wantStatus: 405, wantBody: disabled},
		{name: "disabled: exec", method: "POST", path: "/exec/default/web/nginx?command=ls", wantStatus: 405, wantBody: disabled},
		{name: "disabled: attach", method: "POST", path: "/attach/default/web/nginx?output=1", wantStatus: 405, wantBody: disabled},
		{name: "disabled: port-forward", method: "GET", path: "/portForward/default/web", wantStatus: 405, wantBody: disabled},
		{name: "disabled: run", method: "POST", path: "/run/default/web/nginx?cmd=ls", wantStatus: 405, wantBody: disabled},
		{name: "read-only server never serves logs", debugging: true, readOnly: true, method: "GET", path: "/containerLogs/default/web/nginx", wantStatus: 404},
		{name: "read-only server never serves exec", debugging: true, readOnly: true, method: "POST", path: "/exec/default/web/nginx?command=ls", wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.EnableDebuggingHandlers = tt.debugging
			deps := testDeps(t, newClock())
			s := start(t, cfg, deps)
			client, url := httpsClient(t, deps.CertDir, nil), "https://"+s.Addrs().HTTPS+tt.path
			if tt.readOnly {
				client, url = http.DefaultClient, "http://"+s.Addrs().ReadOnly+tt.path
			}
			r := do(t, client, tt.method, url, "")
			if r.status != tt.wantStatus {
				t.Fatalf("%s %s = %d %q, want %d", tt.method, tt.path, r.status, r.body, tt.wantStatus)
			}
			switch {
			case strings.HasPrefix(tt.wantBody, "~"):
				if !strings.Contains(r.body, tt.wantBody[1:]) {
					t.Errorf("body %q does not contain %q", r.body, tt.wantBody[1:])
				}
			case tt.wantBody != "" && r.body != tt.wantBody:
				t.Errorf("body = %q, want %q", r.body, tt.wantBody)
			}
		})
	}
}

func TestContainerLogsOptions(t *testing.T) {
	cfg := testConfig()
	deps := testDeps(t, newClock())
	logs := deps.Logs.(*fakeLogs)
	s := start(t, cfg, deps)
	path := "/containerLogs/default/web/nginx?tailLines=5&limitBytes=100&sinceTime=2026-01-01T00:00:00Z&timestamps=true&previous=true"
	if r := do(t, httpsClient(t, deps.CertDir, nil), "GET", "https://"+s.Addrs().HTTPS+path, ""); r.status != 200 {
		t.Fatalf("status %d %q", r.status, r.body)
	}
	logs.mu.Lock()
	o := logs.opts
	logs.mu.Unlock()
	if o == nil || o.TailLines == nil || *o.TailLines != 5 || o.LimitBytes == nil || *o.LimitBytes != 100 ||
		o.SinceTime == nil || o.SinceTime.UTC().Format("2006-01-02T15:04:05Z") != "2026-01-01T00:00:00Z" ||
		o.SinceSeconds != nil || !o.Timestamps || !o.Previous || o.Follow {
		t.Fatalf("options = %+v, want the query's", o)
	}
}
