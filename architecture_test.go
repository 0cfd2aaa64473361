package orch_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "orch.io/orch/"

// importRule is one floor of the house (ARCHITECTURE.md): the packages under room, but those
// under exempt, may not import those under any of mayNot, unless under one of except. Only a
// package's own imports are judged: a test may reach further (a component's test may start the
// API server).
type importRule struct {
	room    string
	exempt  []string
	mayNot  []string
	except  []string
	because string
}

var importRules = []importRule{
	{room: "components/apis/", mayNot: []string{"components/", "fakecri", "sim", "conformance", "cmd/"}, except: []string{"components/apis/"},
		because: "the wire and file types are the floor every room stands on"},
	{room: "fakecri", mayNot: []string{"components/", "sim", "conformance", "cmd/"},
		because: "fakecri is a runtime any node agent may run on: it knows the CRI, not orch"},
	{room: "fakecri/", exempt: []string{"fakecri/streams"}, mayNot: []string{"fakecri/"}, except: []string{"fakecri/script", "fakecri/calllog", "fakecri/fakecritest/fixture"},
		because: "the recorder, the control API, the exec shell, the streams and the test support know at most the runtime, its script language, its call log and the fixture; none knows another"},
	{room: "fakecri/streams", mayNot: []string{"fakecri"}, except: []string{"fakecri/script", "fakecri/shell"},
		because: "the streams read the runtime through the interface they own; a streamed exec runs the exec shell"},
	{room: "fakecri/calllog", mayNot: []string{"fakecri"}, except: []string{"fakecri/script"},
		because: "the call log knows the CRI's requests and the script's globs, not the runtime that fills it"},
	{room: "fakecri/fakecritest/fixture", mayNot: []string{"fakecri"},
		because: "fakecri's own tests drive the runtime with the fixture: it knows the CRI, not fakecri"},
	{room: "fakecri/script", mayNot: []string{"fakecri"},
		because: "the script language is what the runtime reads: it knows nothing of the runtime or the rooms around it"},
	{room: "components/featuregates", mayNot: []string{"components/", "fakecri", "sim", "conformance", "cmd/"}, except: []string{"components/apis/"},
		because: "shared mechanisms sit below every component"},
	{room: "components/periodic", mayNot: []string{"components/", "fakecri", "sim", "conformance", "cmd/"}, except: []string{"components/apis/"},
		because: "shared mechanisms sit below every component"},
	{room: "components/reload", mayNot: []string{"components/", "fakecri", "sim", "conformance", "cmd/"}, except: []string{"components/apis/", "components/periodic"},
		because: "shared mechanisms sit below every component"},
	{room: "components/freeport", mayNot: []string{"components/", "fakecri", "sim", "conformance", "cmd/"},
		because: "support every room may share (tests, the suite, orchload) sits below them all"},
	{room: "components/syncbuf", mayNot: []string{"components/", "fakecri", "sim", "conformance", "cmd/"},
		because: "support every room may share (tests, the suite, orchload) sits below them all"},
	{room: "components/certs", mayNot: []string{"components/", "fakecri", "sim", "conformance", "cmd/"}, except: []string{"components/apis/"},
		because: "shared mechanisms sit below every component"},
	{room: "components/authn", mayNot: []string{"components/apiserver", "components/orchlet", "components/authz", "fakecri", "sim", "conformance", "cmd/"},
		because: "authentication serves both the API server and the orchlet, so it may know neither"},
	{room: "components/authz", mayNot: []string{"components/apiserver", "components/orchlet", "fakecri", "sim", "conformance", "cmd/"},
		because: "authorization serves both the API server and the orchlet, so it may know neither"},
	{room: "components/kmsplugin", mayNot: []string{"components/apiserver", "components/orchlet", "fakecri", "sim", "conformance", "cmd/"},
		because: "the KMS plugin is a separate program the API server talks to over gRPC"},
	{room: "components/apiserver/", mayNot: []string{"components/orchlet", "fakecri", "sim", "conformance", "cmd/"},
		because: "the API server knows no node agent"},
	{room: "components/apiserver/", mayNot: []string{"components/apiserver/app"}, except: []string{"components/apiserver/app"},
		because: "app assembles the server from flags; nothing it assembles knows it"},
	{room: "components/apiserver/", mayNot: []string{"components/apiserver/server"}, except: []string{"components/apiserver/server", "components/apiserver/app"},
		because: "filters, admission, registry, endpoints, storage and controllers are the rooms the server is assembled from"},
	{room: "components/orchlet/", mayNot: []string{"components/apiserver", "sim", "conformance", "cmd/"},
		because: "the node agent reaches the API server only through its HTTP API"},
	{room: "components/orchlet/", exempt: []string{"components/orchlet/app/apptest"}, mayNot: []string{"fakecri"},
		because: "the agent reaches its runtime only through the CRI; test support may start a fakecri"},
	{room: "components/orchlet/", mayNot: []string{"components/orchlet/app", "components/orchlet/agent"}, except: []string{"components/orchlet/app", "components/orchlet/agent"},
		because: "agent wires the components and app runs the agent; no component knows either"},
	{room: "components/orchlet/pods/", mayNot: []string{"components/orchlet/pods"}, except: []string{"components/orchlet/pods/"},
		because: "the pod workers use the pod runtime's pieces through interfaces the workers own; no piece knows the workers"},
	{room: "sim", mayNot: []string{"conformance", "cmd/"},
		because: "the simulator drives components; commands and the suite drive it"},
	{room: "conformance", mayNot: []string{"components/", "sim", "cmd/"}, except: []string{"components/apis/", "components/apiserver/tracing/tracingtest", "components/freeport", "components/syncbuf"},
		because: "the suite is black-box: it judges any implementation through its programs and wire"},
	{room: "conformance/catalog", mayNot: []string{"conformance"}, except: []string{"conformance/catalog"},
		because: "the catalog and the coverage gate read the spec; they know no target, report or step"},
	{room: "conformance/target", mayNot: []string{"conformance"}, except: []string{"conformance/target", "conformance/catalog"},
		because: "a target knows the scenarios it is described against, never the steps that drive it or the reports"},
	{room: "conformance/report", mayNot: []string{"conformance"}, except: []string{"conformance/report", "conformance/catalog"},
		because: "a report knows the catalog it counts against, never a target or a step"},
}

// forbids tells whether the rule forbids pkg to import imp.
func (r importRule) forbids(pkg, imp string) bool {
	return under(pkg, r.room) && !underAny(pkg, r.exempt) && underAny(imp, r.mayNot) && !underAny(imp, r.except)
}

// under tells whether pkg is in the room prefix names: a prefix ending in a slash names the
// packages below it, one without also the package itself.
func under(pkg, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(pkg, prefix)
	}
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

func underAny(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		if under(pkg, p) {
			return true
		}
	}
	return false
}

// TestImportsFollowTheFloors fails on an import that crosses a floor of the house the wrong way.
func TestImportsFollowTheFloors(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "e2e,benchnode,peers", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	packages := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok {
			continue
		}
		packages++
		for _, imp := range fields[1:] {
			imp, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			for _, r := range importRules {
				if r.forbids(pkg, imp) {
					t.Errorf("%s imports %s: %s", pkg, imp, r.because)
				}
			}
		}
	}
	if packages < 50 {
		t.Fatalf("go list named %d of the module's packages; the rules judged too little", packages)
	}
}

// The rules' prefixes mean what they say, and a rule's exceptions are kept.
func TestImportRules(t *testing.T) {
	for _, tc := range []struct {
		pkg, prefix string
		want        bool
	}{
		{"sim", "sim", true},
		{"sim/scenario", "sim", true},
		{"simulator", "sim", false},
		{"components/apiserver/app", "components/apiserver/app", true},
		{"components/apiserver/apps", "components/apiserver/app", false},
		{"components/orchlet/pods", "components/orchlet/pods/", false},
		{"components/orchlet/pods/qos", "components/orchlet/pods/", true},
	} {
		if got := under(tc.pkg, tc.prefix); got != tc.want {
			t.Errorf("under(%s, %q) = %v, want %v", tc.pkg, tc.prefix, got, tc.want)
		}
	}
	pieces := importRule{room: "components/orchlet/pods/", mayNot: []string{"components/orchlet/pods"}, except: []string{"components/orchlet/pods/"}}
	for _, tc := range []struct {
		pkg, imp string
		want     bool
	}{
		{"components/orchlet/pods/podsync", "components/orchlet/pods", true},
		{"components/orchlet/pods/podsync", "components/orchlet/pods/qos", false},
		{"components/orchlet/pods", "components/orchlet/pods/qos", false},
		{"components/orchlet/agent", "components/orchlet/pods", false},
	} {
		if got := pieces.forbids(tc.pkg, tc.imp); got != tc.want {
			t.Errorf("%s importing %s forbidden = %v, want %v", tc.pkg, tc.imp, got, tc.want)
		}
	}
	beside := importRule{room: "fakecri/", mayNot: []string{"fakecri/"}, except: []string{"fakecri/script"}}
	if beside.forbids("fakecri/control", "fakecri/script") || !beside.forbids("fakecri/control", "fakecri/record") || beside.forbids("fakecri", "fakecri/script") {
		t.Error("a room beside the runtime may not read the script language, or may read a sibling")
	}
	support := importRule{room: "components/orchlet/", exempt: []string{"components/orchlet/app/apptest"}, mayNot: []string{"fakecri"}}
	if support.forbids("components/orchlet/app/apptest", "fakecri") || !support.forbids("components/orchlet/app", "fakecri") {
		t.Error("an exempt package is judged, or the rest of its room is not")
	}
}
