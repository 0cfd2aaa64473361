package generic_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"

	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/apiserver/registry/coordination"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/events"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/registry/generic/internal/typeschema"
	rbacregistry "orch.io/orch/components/apiserver/registry/rbac"
)

// servedKind is a kind orch-apiserver records managedFields of, with a realistic object of it, a
// later write of another manager and an apply of a third.
type servedKind struct {
	strategy generic.Strategy
	object   runtime.Object
	update   func(runtime.Object)
	apply    runtime.Object
}

func servedKinds() []servedKind {
	now := metav1.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": "x"}, Finalizers: []string{"orch.io/a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "owner", UID: "u-1"}}}
	}
	applied := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "api", "applied": "yes"}}
	}
	pod := &corev1.Pod{ObjectMeta: meta("p"), Spec: corev1.PodSpec{
		NodeName: "n1",
		Containers: []corev1.Container{{
			Name: "web", Image: "nginx:1.27", Args: []string{"-g", "daemon off;"},
			Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
			Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
			VolumeMounts:   []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}},
		}},
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: []corev1.KeyToPath{{Key: "k", Path: "p"}}}}}},
		Tolerations:      []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		NodeSelector:     map[string]string{"disk": "ssd"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg"}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}},
	}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.1.0/24", PodCIDRs: []string{"10.0.1.0/24"},
			Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, Reason: "KubeletReady"},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.35.0", OperatingSystem: "linux", Architecture: "amd64"},
			Images:          []corev1.ContainerImage{{Names: []string{"nginx:1.27"}, SizeBytes: 1 << 20}},
		}}
	lease := &coordinationv1.Lease{ObjectMeta: meta("l"), Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr("n1"), LeaseDurationSeconds: ptr[int32](40), RenewTime: ptr(metav1.MicroTime(now))}}
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: []byte("-----BEGIN CERTIFICATE REQUEST-----"), SignerName: "kubernetes.io/kube-apiserver-client-kubelet",
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, Username: "system:node:n1",
			Groups: []string{"system:nodes"}, Extra: map[string]certificatesv1.ExtraValue{"k": {"v"}}},
		Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
			{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", LastUpdateTime: now}}}}
	event := &k8seventsv1.Event{ObjectMeta: meta("e"), EventTime: metav1.MicroTime(now), ReportingController: "orchlet",
		ReportingInstance: "orchlet-n1", Action: "Pulling", Reason: "Pulling", Note: "pulling image", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", UID: "u-1", FieldPath: "spec.containers{web}"},
		Series:    &k8seventsv1.EventSeries{Count: 2, LastObservedTime: metav1.MicroTime(now)}}

	readPods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	role := &rbacv1.Role{ObjectMeta: meta("r"), Rules: []rbacv1.PolicyRule{readPods}}
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cr"}, Rules: []rbacv1.PolicyRule{readPods},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}}
	subjects := []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.orch.io", Name: "alice"}, {Kind: "ServiceAccount", Name: "robot", Namespace: "default"}}
	roleBinding := &rbacv1.RoleBinding{ObjectMeta: meta("rb"), RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.orch.io", Kind: "Role", Name: "r"}, Subjects: subjects}
	clusterRoleBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.orch.io", Kind: "ClusterRole", Name: "cr"}, Subjects: subjects}
	moreRules := func(rules *[]rbacv1.PolicyRule) {
		*rules = append(*rules, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}})
	}
	moreSubjects := func(subjects *[]rbacv1.Subject) {
		*subjects = append(*subjects, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.orch.io", Name: "devs"})
	}

	return []servedKind{
		{strategy: rbacregistry.RoleStrategy{}, object: role,
			update: func(o runtime.Object) { moreRules(&o.(*rbacv1.Role).Rules) },
			apply:  &rbacv1.Role{ObjectMeta: applied("r"), Rules: []rbacv1.PolicyRule{readPods}}},
		{strategy: rbacregistry.ClusterRoleStrategy{}, object: clusterRole,
			update: func(o runtime.Object) { moreRules(&o.(*rbacv1.ClusterRole).Rules) },
			apply:  &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cr", Labels: map[string]string{"a": "b"}}}},
		{strategy: rbacregistry.RoleBindingStrategy{}, object: roleBinding,
			update: func(o runtime.Object) { moreSubjects(&o.(*rbacv1.RoleBinding).Subjects) },
			apply:  &rbacv1.RoleBinding{ObjectMeta: applied("rb"), RoleRef: roleBinding.RoleRef}},
		{strategy: rbacregistry.ClusterRoleBindingStrategy{}, object: clusterRoleBinding,
			update: func(o runtime.Object) { moreSubjects(&o.(*rbacv1.ClusterRoleBinding).Subjects) },
			apply:  &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb", Labels: map[string]string{"a": "b"}}, RoleRef: clusterRoleBinding.RoleRef, Subjects: subjects[:1]}},
		{strategy: core.PodStrategy{}, object: pod,
			update: func(o runtime.Object) {
				p := o.(*corev1.Pod)
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "C", Value: "3"})
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.1.5", PodIPs: []corev1.PodIP{{IP: "10.0.1.5"}},
					Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
					ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}}
			},
			apply: &corev1.Pod{ObjectMeta: applied("p"), Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.28",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}}}},
		{strategy: core.NodeStrategy{Clock: clock.NewMock()}, object: node,
			update: func(o runtime.Object) {
				n := o.(*corev1.Node)
				n.Status.Conditions[0].Status = corev1.ConditionFalse
				n.Spec.Unschedulable = true
			},
			apply: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}}}},
		{strategy: core.NamespaceStrategy{}, object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "b"}},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			update: func(o runtime.Object) {
				n := o.(*corev1.Namespace)
				n.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse}}}
			},
			apply: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "c"}}}},
		{strategy: core.ConfigMapStrategy{}, object: &corev1.ConfigMap{ObjectMeta: meta("c"), Data: map[string]string{"k": "v", "j": "w"}, BinaryData: map[string][]byte{"b": {1, 2}}},
			update: func(o runtime.Object) { o.(*corev1.ConfigMap).Data["k"] = "v2" },
			apply:  &corev1.ConfigMap{ObjectMeta: applied("c"), Data: map[string]string{"k": "v3", "new": "n"}, Immutable: ptr(false)}},
		{strategy: core.SecretStrategy{}, object: &corev1.Secret{ObjectMeta: meta("s"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("pw")}},
			update: func(o runtime.Object) { o.(*corev1.Secret).StringData = map[string]string{"user": "u"} },
			apply:  &corev1.Secret{ObjectMeta: applied("s"), Data: map[string][]byte{"password": []byte("pw2")}}},
		{strategy: core.ServiceAccountStrategy{}, object: &corev1.ServiceAccount{ObjectMeta: meta("sa"),
			Secrets: []corev1.ObjectReference{{Name: "sa-token"}}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg"}}},
			update: func(o runtime.Object) { o.(*corev1.ServiceAccount).AutomountServiceAccountToken = ptr(false) },
			apply:  &corev1.ServiceAccount{ObjectMeta: applied("sa"), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg2"}}}},
		{strategy: coordination.LeaseStrategy{}, object: lease,
			update: func(o runtime.Object) {
				l := o.(*coordinationv1.Lease)
				l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(10 * time.Second)}
				l.Spec.LeaseTransitions = ptr[int32](1)
			},
			apply: &coordinationv1.Lease{ObjectMeta: applied("l"), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("n2")}}},
		{strategy: certificates.Strategy{Clock: clock.NewMock()}, object: csr,
			update: func(o runtime.Object) {
				o.(*certificatesv1.CertificateSigningRequest).Status.Certificate = []byte("-----BEGIN CERTIFICATE-----")
			},
			apply: &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-1", Labels: map[string]string{"a": "b"}},
				Spec: certificatesv1.CertificateSigningRequestSpec{ExpirationSeconds: ptr[int32](3600)}}},
		{strategy: events.Strategy{}, object: event,
			update: func(o runtime.Object) {
				e := o.(*k8seventsv1.Event)
				e.Series.Count = 3
				e.Related = &corev1.ObjectReference{Kind: "Node", Name: "n1"}
			},
			apply: &k8seventsv1.Event{ObjectMeta: applied("e"), Note: "pulled", Series: &k8seventsv1.EventSeries{Count: 4}}},
		{strategy: events.CoreStrategy{}, object: &corev1.Event{ObjectMeta: meta("ce"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"},
			Reason: "Started", Message: "started", Source: corev1.EventSource{Component: "kubelet"}, Count: 1, FirstTimestamp: now},
			update: func(o runtime.Object) { o.(*corev1.Event).Count = 2 },
			apply:  &corev1.Event{ObjectMeta: applied("ce"), Message: "again", Count: 3}},
	}
}

func ptr[T any](v T) *T { return &v }

// schemaExample is the object whose Go type a store's kind is typed with.
func schemaExample(s generic.Strategy) runtime.Object {
	if st, ok := s.(generic.SchemaType); ok {
		return st.SchemaType()
	}
	return s.New()
}

func gvkOf(s generic.Strategy) schema.GroupVersionKind {
	return s.Resource().GroupVersion().WithKind(s.Kind())
}

// The roots the schema is cut from must be the types the served kinds are typed with, no more.
func TestTypeSchemaRootsAreTheServedKinds(t *testing.T) {
	var want []string
	for _, k := range servedKinds() {
		scheme := runtime.NewScheme()
		scheme.AddKnownTypeWithName(gvkOf(k.strategy), schemaExample(k.strategy))
		name, err := scheme.ToOpenAPIDefinitionName(gvkOf(k.strategy))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	var got []string
	for _, r := range typeschema.Roots {
		if !strings.HasPrefix(r, "__untyped_") {
			got = append(got, r)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("typeschema.Roots = %v, want the served kinds %v", got, want)
	}
}

// typesOnly is a field manager's converters for one kind, its objects in the schema's Go type.
type typesOnly struct {
	gvk     schema.GroupVersionKind
	example runtime.Object
}

func (c typesOnly) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return in, nil
	}
	out, _ := c.New(c.gvk)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(c.gvk)
	return out, nil
}

func (c typesOnly) Convert(in, out, _ any) error { return fmt.Errorf("no conversion") }

func (c typesOnly) ConvertFieldLabel(schema.GroupVersionKind, string, string) (string, string, error) {
	return "", "", fmt.Errorf("no field labels")
}

func (c typesOnly) Default(runtime.Object) {}

func (c typesOnly) New(schema.GroupVersionKind) (runtime.Object, error) {
	obj := c.example.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(c.gvk)
	return obj, nil
}

// history is what a field manager makes of a kind's writes: a create, another manager's update,
// a conflicting apply and the forced one.
func history(t *testing.T, k servedKind, tc managedfields.TypeConverter) []string {
	t.Helper()
	gvk := gvkOf(k.strategy)
	conv := typesOnly{gvk: gvk, example: schemaExample(k.strategy)}
	fm, err := managedfields.NewDefaultFieldManager(tc, conv, conv, conv, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	withKind := func(o runtime.Object) runtime.Object {
		o = o.DeepCopyObject()
		o.GetObjectKind().SetGroupVersionKind(gvk)
		return o
	}
	var out []string
	record := func(o runtime.Object, err error) runtime.Object {
		if err != nil {
			out = append(out, "error: "+err.Error())
			return nil
		}
		m := o.(metav1.Object)
		fields := m.GetManagedFields()
		for i := range fields {
			fields[i].Time = nil // the wall clock's
		}
		if len(fields) == 0 {
			t.Fatalf("%v: no managedFields", gvk)
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(u))
		return o
	}
	empty, _ := conv.New(gvk)
	created := record(fm.Update(empty, withKind(k.object), "creator"))
	next := withKind(created)
	k.update(next)
	updated := record(fm.Update(created, next, "updater"))
	patch, err := runtime.DefaultUnstructuredConverter.ToUnstructured(withKind(k.apply))
	if err != nil {
		t.Fatal(err)
	}
	record(fm.Apply(updated, &unstructured.Unstructured{Object: patch}, "applier", false))
	record(fm.Apply(updated, &unstructured.Unstructured{Object: patch}, "applier", true))
	return out
}

// Every served kind's managedFields and applies must come out of the trimmed schema exactly as
// out of client-go's whole one.
func TestTrimmedTypeConverterIsClientGos(t *testing.T) {
	for _, k := range servedKinds() {
		gvk := gvkOf(k.strategy)
		t.Run(gvk.Kind, func(t *testing.T) {
			trimmed, err := generic.TypeConverter(gvk, schemaExample(k.strategy))
			if err != nil {
				t.Fatal(err)
			}
			scheme := runtime.NewScheme()
			scheme.AddKnownTypeWithName(gvk, schemaExample(k.strategy))
			full := applyconfigurations.NewTypeConverter(scheme)
			got, want := history(t, k, trimmed), history(t, k, full)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("trimmed schema:\n%s\nclient-go's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !strings.HasPrefix(got[2], "error: ") || strings.HasPrefix(got[3], "error: ") {
				t.Fatalf("the unforced apply should conflict and the forced one not:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}
