package jsoncopy_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/jsoncopy"
)

// checkDecoded fails t unless Decoded of obj is json.Unmarshal of json.Marshal of it, where it
// makes one; it reports whether it did.
func checkDecoded(t *testing.T, newObj func() runtime.Object, obj runtime.Object) bool {
	t.Helper()
	got, ok := jsoncopy.Decoded(obj)
	data, err := json.Marshal(obj)
	want := newObj()
	if err == nil {
		err = json.Unmarshal(data, want)
	}
	switch {
	case err != nil && ok:
		t.Fatalf("Decoded made a copy where the round trip fails (%v): %#v", err, obj)
	case ok && !reflect.DeepEqual(got, want):
		t.Fatalf("Decoded is not the decode of\n%s\ngot  %#v\nwant %#v", data, got, want)
	}
	return ok
}

func TestDecodedFollowsTheEncoding(t *testing.T) {
	at := time.Date(2026, 11, 29, 21, 3, 4, 567891234, time.FixedZone("x", 3600))
	node := func(change func(n *corev1.Node)) runtime.Object {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		change(n)
		return n
	}
	for name, c := range map[string]struct {
		obj      runtime.Object
		declines bool
	}{
		"times to the second, in the local zone": {obj: node(func(n *corev1.Node) {
			n.CreationTimestamp = metav1.NewTime(at)
			n.Status.Conditions = []corev1.NodeCondition{{Type: "Ready", LastHeartbeatTime: metav1.NewTime(at.Add(-time.Hour))}}
		})},
		"a zero time, a zero creation time": {obj: node(func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: "Ready"}}
		})},
		"a pointer to a zero time is null": {obj: node(func(n *corev1.Node) {
			n.DeletionTimestamp = &metav1.Time{}
		})},
		"a pointer to an empty list is not null": {obj: &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{SupplementalGroups: []int64{}}}}},
		"empty lists and maps omitted are nil": {obj: node(func(n *corev1.Node) {
			n.Labels, n.Finalizers, n.Status.Images = map[string]string{}, []string{}, []corev1.ContainerImage{}
		})},
		"an empty list not omitted stays": {obj: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{}}}},
		"a nil list not omitted is null":  {obj: &corev1.Pod{Spec: corev1.PodSpec{Containers: nil}}},
		"quantities in their canonical form": {obj: node(func(n *corev1.Node) {
			n.Status.Capacity = corev1.ResourceList{"cpu": resource.MustParse("1000m"), "memory": *resource.NewQuantity(8<<30, resource.BinarySI), "x": resource.MustParse("0.5Gi")}
		})},
		"a field set compacted and escaped, a string escaped": {obj: node(func(n *corev1.Node) {
			n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "<&>", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1("{\"f:metadata\": {\"f:labels\":\n {\"f:<a>\": {}}}}")}}
		})},
		"micro times to the microsecond, in the local zone": {obj: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			RenewTime: &metav1.MicroTime{Time: at}, AcquireTime: &metav1.MicroTime{Time: at.Add(-1500 * time.Nanosecond)}}}},
		"a pointer to a zero micro time is null": {obj: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{}}}},
		"a micro time past 9999": {obj: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			RenewTime: &metav1.MicroTime{Time: time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)}}}, declines: true},
		"a micro time before year 1": {obj: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			RenewTime: &metav1.MicroTime{Time: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}}}, declines: true},
		"maps of each kind of value, several entries each": {obj: &mapsObject{
			Ints:    map[string]int{"a": 1, "b": -2, "c": 0},
			Strings: map[string]string{"a": "x", "b": "", "<&>": "\u00e9"},
			Structs: map[string]mapItem{
				"a": {Name: "a", List: []string{"1", "2"}, At: metav1.NewTime(at)},
				"b": {Name: "b", List: []string{}},
				"c": {List: []string{"3"}, At: metav1.NewTime(at.Add(time.Hour))},
			},
			Times:  map[string]*metav1.Time{"zero": {}, "nil": nil, "at": {Time: at}},
			Nested: map[string]map[string]string{"a": {"x": "1", "y": "2"}, "b": nil, "c": {}},
		}},
		"a map's value not UTF-8": {obj: &mapsObject{Nested: map[string]map[string]string{"a": {"x": "1"}, "b": {"y": "\xff"}}}, declines: true},
		"a string not UTF-8":      {obj: node(func(n *corev1.Node) { n.Labels = map[string]string{"a": "\xff"} }), declines: true},
		"a key not UTF-8":         {obj: node(func(n *corev1.Node) { n.Labels = map[string]string{"\xfe": "a"} }), declines: true},
		"a year past 9999": {obj: node(func(n *corev1.Node) {
			n.CreationTimestamp = metav1.NewTime(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC))
		}), declines: true},
	} {
		t.Run(name, func(t *testing.T) {
			newObj := func() runtime.Object { return reflect.New(reflect.TypeOf(c.obj).Elem()).Interface().(runtime.Object) }
			if made := checkDecoded(t, newObj, c.obj); made == c.declines {
				t.Fatalf("copy made: %v, want %v", made, !c.declines)
			}
		})
	}
}

// mapsObject has maps of each kind of value Decoded copies.
type mapsObject struct {
	metav1.TypeMeta `json:",inline"`
	Ints            map[string]int               `json:"ints"`
	Strings         map[string]string            `json:"strings,omitempty"`
	Structs         map[string]mapItem           `json:"structs"`
	Times           map[string]*metav1.Time      `json:"times"`
	Nested          map[string]map[string]string `json:"nested"`
}

type mapItem struct {
	Name string      `json:"name,omitempty"`
	List []string    `json:"list,omitempty"`
	At   metav1.Time `json:"at"`
}

func (o *mapsObject) DeepCopyObject() runtime.Object { c := *o; return &c } // not called

// The two objects a simulated API-mode node writes every 10 s, as the store holds them after
// the write: its status (labels, field sets, quantities, conditions) and its lease.
func heartbeatObjects() (*corev1.Node, *coordinationv1.Lease) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC))
	sets := []metav1.ManagedFieldsEntry{
		{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/arch":{},"f:kubernetes.io/hostname":{},"f:kubernetes.io/os":{}}}}`)},
		{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:addresses":{".":{},"k:{\"type\":\"Hostname\"}":{".":{},"f:address":{},"f:type":{}},"k:{\"type\":\"InternalIP\"}":{".":{},"f:address":{},"f:type":{}}},"f:allocatable":{".":{},"f:cpu":{},"f:memory":{},"f:pods":{}},"f:capacity":{".":{},"f:cpu":{},"f:memory":{},"f:pods":{}},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:daemonEndpoints":{"f:kubeletEndpoint":{"f:Port":{}}},"f:nodeInfo":{"f:architecture":{},"f:kubeletVersion":{},"f:operatingSystem":{}}}}`)},
	}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-0042", UID: "6f1c2b9e-0042-4a4c-9d1e-2f3a4b5c6d7e", CreationTimestamp: at, ManagedFields: sets,
			Labels: map[string]string{"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": "node-0042", "kubernetes.io/os": "linux"}},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-0042"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.42"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.34.4", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, LastHeartbeatTime: at, LastTransitionTime: at, Reason: "KubeletHasSufficientMemory", Message: "orchlet has sufficient memory available"})
	}
	holder, duration := "node-0042", int32(40)
	renew := metav1.NewMicroTime(time.Date(2026, 1, 1, 0, 10, 0, 123456789, time.UTC))
	lease := &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-0042", Namespace: "orch-node-lease", UID: "0b6f7e1a-0042-4d3c-8b2a-1c0d9e8f7a6b", CreationTimestamp: at,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-0042", UID: node.UID}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1", Time: &at, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"6f1c2b9e-0042-4a4c-9d1e-2f3a4b5c6d7e\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`)}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &renew},
	}
	return node, lease
}

func TestDecodedHeartbeatObjects(t *testing.T) {
	node, lease := heartbeatObjects()
	if !checkDecoded(t, func() runtime.Object { return &corev1.Node{} }, node) {
		t.Fatal("no copy of a node")
	}
	if !checkDecoded(t, func() runtime.Object { return &coordinationv1.Lease{} }, lease) {
		t.Fatal("no copy of a lease")
	}
}

func BenchmarkDecoded(b *testing.B) {
	node, lease := heartbeatObjects()
	for name, obj := range map[string]runtime.Object{"Node": node, "Lease": lease} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := jsoncopy.Decoded(obj); !ok {
					b.Fatal("declined")
				}
			}
		})
	}
}
