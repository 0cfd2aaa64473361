package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

func TestDiscovery(t *testing.T) {
	e := newEnv(t)
	var groups metav1.APIGroupList
	decode(t, e.do("GET", "/apis", nil), &groups)
	if groups.Kind != "APIGroupList" || len(groups.Groups) != 11 || groups.Groups[0].Name != "events.orch.io" || groups.Groups[0].PreferredVersion.GroupVersion != "events.orch.io/v1" ||
		groups.Groups[1].Name != "coordination.orch.io" || groups.Groups[2].Name != "certificates.orch.io" ||
		groups.Groups[3].Name != "rbac.authorization.orch.io" || groups.Groups[4].Name != "authentication.orch.io" || groups.Groups[5].Name != "authorization.orch.io" ||
		// Kubernetes' names of the same groups follow orch's, for its typed clients.
		groups.Groups[6].Name != "coordination.k8s.io" || groups.Groups[8].Name != "rbac.authorization.k8s.io" || groups.Groups[10].Name != "authorization.k8s.io" {
		t.Fatalf("/apis = %+v", groups)
	}
	var versions metav1.APIVersions
	decode(t, e.do("GET", "/api", nil), &versions)
	if versions.Kind != "APIVersions" || strings.Join(versions.Versions, ",") != "v1" {
		t.Fatalf("/api = %+v", versions)
	}
	var core metav1.APIResourceList
	decode(t, e.do("GET", "/api/v1", nil), &core)
	var names []string
	for _, r := range core.APIResources {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "namespaces,namespaces/status,namespaces/finalize,nodes,nodes/status,nodes/proxy,pods,pods/status,pods/ephemeralcontainers,pods/binding,pods/eviction,pods/log,pods/exec,pods/attach,pods/portforward,events,configmaps,secrets,serviceaccounts" {
		t.Fatalf("/api/v1 resources = %s", got)
	}
	var csrs metav1.APIResourceList
	decode(t, e.do("GET", "/apis/certificates.orch.io/v1", nil), &csrs)
	names = nil
	for _, r := range csrs.APIResources {
		names = append(names, r.Name)
		if r.Namespaced || r.Kind != "CertificateSigningRequest" {
			t.Errorf("certificates.orch.io/v1 %s: namespaced %v kind %q", r.Name, r.Namespaced, r.Kind)
		}
	}
	if got := strings.Join(names, ","); got != "certificatesigningrequests,certificatesigningrequests/status,certificatesigningrequests/approval" {
		t.Fatalf("certificates.orch.io/v1 resources = %s", got)
	}
	var group metav1.APIGroup
	decode(t, e.do("GET", "/apis/events.orch.io", nil), &group)
	if group.Kind != "APIGroup" || group.Name != "events.orch.io" || len(group.Versions) != 1 || group.Versions[0].Version != "v1" {
		t.Fatalf("/apis/events.orch.io = %+v", group)
	}
	var resources metav1.APIResourceList
	decode(t, e.do("GET", "/apis/events.orch.io/v1", nil), &resources)
	if resources.Kind != "APIResourceList" || resources.GroupVersion != "events.orch.io/v1" || len(resources.APIResources) != 1 {
		t.Fatalf("/apis/events.orch.io/v1 = %+v", resources)
	}
	r := resources.APIResources[0]
	wantVerbs := "create,delete,deletecollection,get,list,patch,update,watch"
	if r.Name != "events" || r.Kind != "Event" || !r.Namespaced || strings.Join(r.Verbs, ",") != wantVerbs {
		t.Fatalf("events resource = %+v", r)
	}
}

func decode(t *testing.T, r response, into any) {
	t.Helper()
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if err := json.Unmarshal(r.body, into); err != nil {
		t.Fatal(err)
	}
}

func TestVersionHealthAndMetrics(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Version = version.Info{Major: "0", Minor: "1", GitVersion: "v0.1.0"} })
	var v version.Info
	decode(t, e.do("GET", "/version", nil), &v)
	if v.GitVersion != "v0.1.0" {
		t.Errorf("/version = %+v", v)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if r := e.do("GET", path, nil); r.code != 200 || string(r.body) != "ok" {
			t.Errorf("%s = %d %q", path, r.code, r.body)
		}
	}
	if r := e.do("GET", "/readyz?verbose", nil); !strings.Contains(string(r.body), "[+]etcd ok") {
		t.Errorf("/readyz?verbose = %q", r.body)
	}
	e.create("m")
	e.do("GET", eventsPath+"/missing", nil)
	r := e.do("GET", "/metrics", nil)
	for _, want := range []string{
		`apiserver_request_total{code="201",group="events.orch.io",resource="events",verb="create",version="v1"} 1`,
		`apiserver_request_total{code="404",group="events.orch.io",resource="events",verb="get",version="v1"} 1`,
		`apiserver_request_duration_seconds_count{group="events.orch.io",resource="events",verb="create",version="v1"} 1`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// kubectl asks for a Table; the columns are Kubernetes' event printer's.
func TestTableOutput(t *testing.T) {
	e := newEnv(t)
	e.create("sample-1")
	r := e.do("GET", eventsPath, nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var table metav1.Table
	decode(t, r, &table)
	if table.Kind != "Table" || len(table.ColumnDefinitions) != 10 || table.ColumnDefinitions[0].Name != "Last Seen" || len(table.Rows) != 1 {
		t.Fatalf("table = %+v", table)
	}
	cells := table.Rows[0].Cells
	if cells[1] != "Normal" || cells[2] != "Pulled" || cells[3] != "pod/web-0" || cells[5] != "peers.io/capture, capture-1" || cells[9] != "sample-1" {
		t.Fatalf("cells = %v", cells)
	}
	if !strings.Contains(string(r.body), `"kind":"PartialObjectMetadata"`) {
		t.Errorf("row object is not PartialObjectMetadata: %s", r.body)
	}
	y := e.do("GET", eventsPath+"/sample-1", nil, "Accept", "application/yaml")
	if y.header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(y.body), "kind: Event") {
		t.Errorf("yaml answer: %s %s", y.header.Get("Content-Type"), y.body)
	}
}

// The OpenAPI documents carry the descriptions a resource's strategy gives (kubectl explain reads
// them): the events' are Kubernetes'.
func TestOpenAPIDescriptions(t *testing.T) {
	e := newEnv(t)
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(e.do("GET", "/openapi/v3", nil).body, &root); err != nil {
		t.Fatal(err)
	}
	events := root.Paths["apis/events.orch.io/v1"].ServerRelativeURL
	if events == "" {
		t.Fatalf("no events.orch.io/v1 document: %v", root.Paths)
	}
	r := e.do("GET", events, nil)
	for _, want := range []string{"Event is a report of an event somewhere in the cluster.", "EventSeries contain information on series of events"} {
		if r.code != http.StatusOK || !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %d, want %q in it", events, r.code, want)
		}
	}
}
