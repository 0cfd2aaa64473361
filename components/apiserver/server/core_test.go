package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/controllers/namespace"
)

func podBody(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1.0"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func (r response) pod(t *testing.T) *corev1.Pod {
	t.Helper()
	if r.code >= 300 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal(r.body, p); err != nil || p.Kind != "Pod" {
		t.Fatalf("decoding Pod from %d %s: %v", r.code, r.body, err)
	}
	return p
}

func (r response) namespace(t *testing.T) *corev1.Namespace {
	t.Helper()
	if r.code >= 300 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	ns := &corev1.Namespace{}
	if err := json.Unmarshal(r.body, ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestInitialNamespaces(t *testing.T) {
	e := newEnv(t)
	var list corev1.NamespaceList
	decode(t, e.do("GET", "/api/v1/namespaces", nil), &list)
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
		if ns.Status.Phase != corev1.NamespaceActive || ns.Labels["orch.io/metadata.name"] != ns.Name {
			t.Errorf("namespace %s: phase %q labels %v", ns.Name, ns.Status.Phase, ns.Labels)
		}
	}
	if got := strings.Join(names, ","); got != "default,orch-node-lease,orch-public,orch-system" {
		t.Fatalf("namespaces = %s", got)
	}
	if list.Kind != "NamespaceList" || list.APIVersion != "v1" {
		t.Fatalf("list kind %s/%s", list.APIVersion, list.Kind)
	}
}

func TestPodCreateDefaultsAndValidation(t *testing.T) {
	e := newEnv(t)
	p := e.do("POST", "/api/v1/namespaces/default/pods", podBody("web")).pod(t)
	c := p.Spec.Containers[0]
	if p.Status.Phase != corev1.PodPending || p.Status.QOSClass != corev1.PodQOSBestEffort || p.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		*p.Spec.TerminationGracePeriodSeconds != 30 || c.ImagePullPolicy != corev1.PullIfNotPresent || c.TerminationMessagePath != "/dev/termination-log" ||
		p.UID == "" || p.ResourceVersion == "" || p.Generation != 1 {
		t.Fatalf("defaults not applied: %+v", p)
	}
	if latest := e.do("POST", "/api/v1/namespaces/default/pods", podBody("latest", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "app" })).pod(t); latest.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("an untagged image pulls %s, want Always", latest.Spec.Containers[0].ImagePullPolicy)
	}
	e.do("POST", "/api/v1/namespaces/nowhere/pods", podBody("x")).expectStatus(t, 404, metav1.StatusReasonNotFound)

	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		causes []string
	}{
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, []string{"spec.containers"}},
		{"no image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []string{"spec.containers[0].image"}},
		{"bad name", func(p *corev1.Pod) { p.Name = "Not_A_Name" }, []string{"metadata.name"}},
		{"duplicate container", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) }, []string{"spec.containers[1].name"}},
		{"bad restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []string{"spec.restartPolicy"}},
		{"bad port", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}} }, []string{"spec.containers[0].ports[0].containerPort"}},
		{"mount of no volume", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, []string{"spec.containers[0].volumeMounts[0].name"}},
		{"negative grace", func(p *corev1.Pod) { g := int64(-1); p.Spec.TerminationGracePeriodSeconds = &g }, []string{"spec.terminationGracePeriodSeconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := e.do("POST", "/api/v1/namespaces/default/pods", podBody("bad", tc.mutate)).expectStatus(t, 422, metav1.StatusReasonInvalid)
			var fields []string
			for _, c := range st.Details.Causes {
				fields = append(fields, c.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tc.causes, ",") || st.Details.Kind != "Pod" {
				t.Fatalf("causes %v kind %q, want %v: %s", fields, st.Details.Kind, tc.causes, st.Message)
			}
		})
	}
}

func TestPodUpdateRules(t *testing.T) {
	e := newEnv(t)
	p := e.do("POST", "/api/v1/namespaces/default/pods", podBody("web", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}
	})).pod(t)
	path := "/api/v1/namespaces/default/pods/web"

	image := p.DeepCopy()
	image.Spec.Containers[0].Image = "registry.example/app:2.0"
	image.Spec.Tolerations = append(image.Spec.Tolerations, corev1.Toleration{Key: "b", Operator: corev1.TolerationOpExists})
	d := int64(60)
	image.Spec.ActiveDeadlineSeconds = &d
	updated := e.do("PUT", path, image).pod(t)
	if updated.Spec.Containers[0].Image != "registry.example/app:2.0" || updated.Generation != 2 {
		t.Fatalf("image update: %+v", updated.Spec.Containers[0])
	}

	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		field  string
	}{
		{"command", func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sh"} }, "spec"},
		{"removed toleration", func(p *corev1.Pod) { p.Spec.Tolerations = nil }, "spec.tolerations"},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }, "spec.nodeName"},
		{"longer deadline", func(p *corev1.Pod) { d := int64(120); p.Spec.ActiveDeadlineSeconds = &d }, "spec.activeDeadlineSeconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := updated.DeepCopy()
			bad.ResourceVersion = ""
			tc.mutate(bad)
			st := e.do("PUT", path, bad).expectStatus(t, 422, metav1.StatusReasonInvalid)
			found := false
			for _, c := range st.Details.Causes {
				found = found || c.Field == tc.field
			}
			if !found {
				t.Fatalf("no cause at %s: %s", tc.field, st.Message)
			}
		})
	}

	// A status written through the pod is dropped; through pods/status it is kept, and the spec
	// written there is dropped.
	withStatus := updated.DeepCopy()
	withStatus.Status.Phase = corev1.PodRunning
	if got := e.do("PUT", path, withStatus).pod(t); got.Status.Phase != corev1.PodPending {
		t.Fatalf("status changed through the pod: %s", got.Status.Phase)
	}
	status := e.do("PATCH", path+"/status", `{"status":{"phase":"Running","podIP":"10.0.0.5"},"spec":{"activeDeadlineSeconds":1}}`, "Content-Type", "application/merge-patch+json").pod(t)
	if status.Status.Phase != corev1.PodRunning || status.Status.PodIP != "10.0.0.5" || *status.Spec.ActiveDeadlineSeconds != 60 {
		t.Fatalf("status patch: phase %s ip %s deadline %d", status.Status.Phase, status.Status.PodIP, *status.Spec.ActiveDeadlineSeconds)
	}
	e.do("PATCH", path+"/status", `{"status":{"phase":"Sleeping"}}`, "Content-Type", "application/merge-patch+json").expectStatus(t, 422, metav1.StatusReasonInvalid)
}

func TestPodBindingAndFieldSelectors(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"a", "b"} {
		e.do("POST", "/api/v1/namespaces/default/pods", podBody(name)).pod(t)
	}
	binding := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"a"},"target":{"kind":"Node","name":"n1"}}`
	if r := e.do("POST", "/api/v1/namespaces/default/pods/a/binding", binding); r.code != 201 {
		t.Fatalf("binding: %d %s", r.code, r.body)
	}
	e.do("POST", "/api/v1/namespaces/default/pods/a/binding", binding).expectStatus(t, 409, metav1.StatusReasonConflict)
	if p := e.do("GET", "/api/v1/namespaces/default/pods/a", nil).pod(t); p.Spec.NodeName != "n1" || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Type != corev1.PodScheduled {
		t.Fatalf("bound pod: node %q conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	}
	var list corev1.PodList
	decode(t, e.do("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", nil), &list)
	if len(list.Items) != 1 || list.Items[0].Name != "a" {
		t.Fatalf("spec.nodeName=n1 selects %d pods", len(list.Items))
	}
	decode(t, e.do("GET", "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3D,status.phase%3DPending", nil), &list)
	if len(list.Items) != 1 || list.Items[0].Name != "b" {
		t.Fatalf("unbound pending pods: %d", len(list.Items))
	}
	e.do("GET", "/api/v1/pods?fieldSelector=spec.image%3Dx", nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
}

func TestPodGracefulDeletion(t *testing.T) {
	e := newEnv(t)
	e.do("POST", "/api/v1/namespaces/default/pods", podBody("unbound")).pod(t)
	if r := e.do("DELETE", "/api/v1/namespaces/default/pods/unbound", nil); r.code != 200 {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	e.do("GET", "/api/v1/namespaces/default/pods/unbound", nil).expectStatus(t, 404, metav1.StatusReasonNotFound)

	e.do("POST", "/api/v1/namespaces/default/pods", podBody("bound", func(p *corev1.Pod) { p.Spec.NodeName = "n1" })).pod(t)
	path := "/api/v1/namespaces/default/pods/bound"
	p := e.do("DELETE", path, nil).pod(t)
	if p.DeletionTimestamp == nil || *p.DeletionGracePeriodSeconds != 30 || !p.DeletionTimestamp.Time.Equal(start.Add(30*time.Second)) {
		t.Fatalf("graceful delete: timestamp %v grace %v", p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
	}
	// A longer grace period does not extend it; a shorter one shortens it.
	if again := e.do("DELETE", path, `{"gracePeriodSeconds":60}`).pod(t); *again.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("grace extended to %d", *again.DeletionGracePeriodSeconds)
	}
	if shorter := e.do("DELETE", path+"?gracePeriodSeconds=10", nil).pod(t); *shorter.DeletionGracePeriodSeconds != 10 {
		t.Fatalf("grace not shortened: %d", *shorter.DeletionGracePeriodSeconds)
	}
	if got := e.do("GET", path, nil).pod(t); got.DeletionTimestamp == nil {
		t.Fatal("a pod being deleted vanished before its agent confirmed")
	}
	// The agent confirms: grace 0 with the uid precondition.
	e.do("DELETE", path, `{"gracePeriodSeconds":0,"preconditions":{"uid":"not-it"}}`).expectStatus(t, 409, metav1.StatusReasonConflict)
	if gone := e.do("DELETE", path, `{"gracePeriodSeconds":0,"preconditions":{"uid":"`+string(p.UID)+`"}}`); gone.code != 200 {
		t.Fatalf("confirming delete: %d %s", gone.code, gone.body)
	}
	e.do("GET", path, nil).expectStatus(t, 404, metav1.StatusReasonNotFound)
}

func TestPodEviction(t *testing.T) {
	e := newEnv(t)
	e.do("POST", "/api/v1/namespaces/default/pods", podBody("web", func(p *corev1.Pod) { p.Spec.NodeName = "n1" })).pod(t)
	r := e.do("POST", "/api/v1/namespaces/default/pods/web/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web"},"deleteOptions":{"gracePeriodSeconds":5}}`)
	if st := r.status(t); r.code != 201 || st.Status != metav1.StatusSuccess {
		t.Fatalf("eviction: %d %s", r.code, r.body)
	}
	if p := e.do("GET", "/api/v1/namespaces/default/pods/web", nil).pod(t); p.DeletionTimestamp == nil || *p.DeletionGracePeriodSeconds != 5 {
		t.Fatalf("evicted pod: %v", p.DeletionGracePeriodSeconds)
	}
	e.do("POST", "/api/v1/namespaces/default/pods/none/eviction", `{"metadata":{"name":"none"}}`).expectStatus(t, 404, metav1.StatusReasonNotFound)
}

func TestNamespaceDeletionEmptiesIt(t *testing.T) {
	e := newEnv(t)
	e.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`).namespace(t)
	e.do("POST", "/api/v1/namespaces/team/pods", podBody("loose")).pod(t)
	e.do("POST", "/api/v1/namespaces/team/pods", podBody("running", func(p *corev1.Pod) { p.Spec.NodeName = "n1" })).pod(t)
	if r := e.do("POST", "/apis/coordination.orch.io/v1/namespaces/team/leases", `{"metadata":{"name":"l"}}`); r.code != 201 {
		t.Fatalf("lease: %d %s", r.code, r.body)
	}
	e.do("POST", "/apis/events.orch.io/v1/namespaces/team/events", sample("e1")).event(t)

	ns := e.do("DELETE", "/api/v1/namespaces/team", nil).namespace(t)
	if ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("deleted namespace: phase %s", ns.Status.Phase)
	}
	st := e.do("POST", "/api/v1/namespaces/team/pods", podBody("late")).expectStatus(t, 403, metav1.StatusReasonForbidden)
	if !strings.Contains(st.Message, "unable to create new content in namespace team because it is being terminated") {
		t.Fatalf("message: %s", st.Message)
	}
	e.clock.Add(namespace.SweepInterval)
	eventually(t, func() bool {
		var pods corev1.PodList
		decode(t, e.do("GET", "/api/v1/namespaces/team/pods", nil), &pods)
		leases := e.do("GET", "/apis/coordination.orch.io/v1/namespaces/team/leases/l", nil)
		events := e.do("GET", "/apis/events.orch.io/v1/namespaces/team/events/e1", nil)
		return len(pods.Items) == 1 && pods.Items[0].DeletionTimestamp != nil && leases.code == 404 && events.code == 404
	})
	e.clock.Add(namespace.SweepInterval)
	if r := e.do("GET", "/api/v1/namespaces/team", nil); r.code != 200 {
		t.Fatalf("the namespace went while a pod was still stopping: %d", r.code)
	}
	// The agent confirms the pod stopped; the namespace then goes.
	e.do("DELETE", "/api/v1/namespaces/team/pods/running?gracePeriodSeconds=0", nil).pod(t)
	eventually(t, func() bool {
		e.clock.Add(namespace.SweepInterval)
		return e.do("GET", "/api/v1/namespaces/team", nil).code == 404
	})
}

func TestNodeStatusSubresourceAndTable(t *testing.T) {
	e := newEnv(t)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"node-role.orch.io/worker": ""}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v0.1.0"},
		},
	}
	created := e.do("POST", "/api/v1/nodes", node)
	if created.code != 201 {
		t.Fatalf("create node: %d %s", created.code, created.body)
	}
	e.clock.Add(90 * time.Second)
	r := e.do("GET", "/api/v1/nodes", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var table metav1.Table
	decode(t, r, &table)
	if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "n1" || table.Rows[0].Cells[1] != "Ready" || table.Rows[0].Cells[2] != "worker" ||
		table.Rows[0].Cells[3] != "90s" || table.Rows[0].Cells[4] != "v0.1.0" {
		t.Fatalf("node table: %+v", table.Rows)
	}
	// Through the node, status stays; through nodes/status, only status changes.
	if r := e.do("PATCH", "/api/v1/nodes/n1", `{"status":{"conditions":[{"type":"Ready","status":"False"}]},"spec":{"unschedulable":true}}`, "Content-Type", "application/strategic-merge-patch+json"); r.code != 200 ||
		!strings.Contains(string(r.body), `"status":"True"`) || !strings.Contains(string(r.body), `"unschedulable":true`) {
		t.Fatalf("node patch: %d %s", r.code, r.body)
	}
	r = e.do("PATCH", "/api/v1/nodes/n1/status", `{"status":{"conditions":[{"type":"Ready","status":"False"}]},"spec":{"unschedulable":false}}`, "Content-Type", "application/strategic-merge-patch+json")
	var n corev1.Node
	decode(t, r, &n)
	if n.Status.Conditions[0].Status != corev1.ConditionFalse || !n.Spec.Unschedulable {
		t.Fatalf("status patch: ready %s unschedulable %v", n.Status.Conditions[0].Status, n.Spec.Unschedulable)
	}
	e.do("POST", "/api/v1/nodes", `{"metadata":{"name":"n2"},"spec":{"taints":[{"key":"k","effect":"Sometimes"}]}}`).expectStatus(t, 422, metav1.StatusReasonInvalid)
}

func TestLeaseRenewal(t *testing.T) {
	e := newEnv(t)
	holder, duration := "n1", int32(40)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration}}
	path := "/apis/coordination.orch.io/v1/namespaces/orch-node-lease/leases"
	r := e.do("POST", path, lease)
	var got coordinationv1.Lease
	if err := json.Unmarshal(r.body, &got); err != nil || r.code != 201 || got.APIVersion != "coordination.orch.io/v1" || got.Kind != "Lease" {
		t.Fatalf("create lease: %d %s", r.code, r.body)
	}
	now := metav1.NewMicroTime(start.Add(10 * time.Second))
	got.Spec.RenewTime = &now
	r = e.do("PUT", path+"/n1", &got)
	if r.code != http.StatusOK || !strings.Contains(string(r.body), `"renewTime":"2026-11-21T23:00:10.000000Z"`) {
		t.Fatalf("renew: %d %s", r.code, r.body)
	}
	// A stale resourceVersion is a conflict: two holders cannot both renew.
	e.do("PUT", path+"/n1", &got).expectStatus(t, 409, metav1.StatusReasonConflict)
	e.do("POST", path, `{"metadata":{"name":"bad"},"spec":{"leaseDurationSeconds":0}}`).expectStatus(t, 422, metav1.StatusReasonInvalid)
}
