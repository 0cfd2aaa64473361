package nodestatus

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apiversion "k8s.io/apimachinery/pkg/version"

	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/options"
)

// Allocatable is capacity less what --kube-reserved and --system-reserved hold back, and less the
// hard memory.available threshold (Kubernetes' 100Mi when --eviction-hard is not given) unless
// --experimental-allocatable-ignore-eviction.
// The Node takes the container manager's resources, with the pods it admits in both lists.
func TestCapacityAndAllocatable(t *testing.T) {
	o, err := options.Parse([]string{"--orchconfig=/etc/orch/orchlet.conf", "--max-pods=30"}, apiversion.Info{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cm.NodeResources(o.Config, false, cm.Machine{Cores: 4, Memory: 8 << 30})
	if err != nil {
		t.Fatal(err)
	}
	capacity, allocatable := CapacityAndAllocatable(o.Config, 4, r)
	got := func(l corev1.ResourceList, n corev1.ResourceName) string { q := l[n]; return q.String() }
	if got(capacity, corev1.ResourceCPU) != "4" || got(capacity, corev1.ResourceMemory) != "8Gi" || got(allocatable, corev1.ResourceMemory) != "8092Mi" ||
		got(capacity, corev1.ResourcePods) != "30" || got(allocatable, corev1.ResourcePods) != "30" {
		t.Errorf("capacity %v allocatable %v", capacity, allocatable)
	}
}

// --node-ip's addresses come first, in its order, then the hostname; a bad one is refused by name.
func TestAddresses(t *testing.T) {
	for _, tc := range []struct {
		nodeIP string
		want   []string
		err    string
	}{
		{"10.0.0.1", []string{"10.0.0.1", "node-a"}, ""},
		{"10.0.0.1, fd00::1", []string{"10.0.0.1", "fd00::1", "node-a"}, ""},
		{"10.0.0.1,bogus", nil, `--node-ip 10.0.0.1,bogus: "bogus" is not an IP address`},
	} {
		addrs, err := Addresses(tc.nodeIP, "node-a")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.nodeIP, err, tc.err)
			}
			continue
		}
		var got []string
		for _, a := range addrs {
			got = append(got, a.Address)
		}
		if err != nil || !slices.Equal(got, tc.want) || addrs[len(addrs)-1].Type != corev1.NodeHostName {
			t.Errorf("%q: %v %v, want %v", tc.nodeIP, addrs, err, tc.want)
		}
	}
	// Without --node-ip, the host's default address (if any) and the hostname.
	addrs, err := Addresses("", "node-a")
	if err != nil || addrs[len(addrs)-1] != (corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-a"}) {
		t.Errorf("default: %v %v", addrs, err)
	}
}

// The Node's labels are the well-known three, with --node-labels over them.
func TestLabels(t *testing.T) {
	got := Labels("node-a", map[string]string{"orch.io/role": "edge", "orch.io/hostname": "other"})
	if got["orch.io/hostname"] != "other" || got["orch.io/role"] != "edge" || got["orch.io/os"] != runtime.GOOS || got["orch.io/arch"] != runtime.GOARCH || len(got) != 4 {
		t.Errorf("Labels = %v", got)
	}
}

// Under --cloud-provider=external the kubelet registers the hostname alone without --node-ip, and
// gives the cloud controller --node-ip's addresses as the provided-node-ip annotation.
func TestCloudAddresses(t *testing.T) {
	for _, tc := range []struct {
		nodeIP, provided string
		addrs            []corev1.NodeAddress
	}{
		{"", "", []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}}},
		{"10.0.0.5", "10.0.0.5", []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "n1"}}},
		{"10.0.0.5,fd00::5", "10.0.0.5,fd00::5", []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeInternalIP, Address: "fd00::5"}, {Type: corev1.NodeHostName, Address: "n1"}}},
	} {
		addrs, provided, err := CloudAddresses(tc.nodeIP, "n1")
		if err != nil || provided != tc.provided || !reflect.DeepEqual(addrs, tc.addrs) {
			t.Errorf("CloudAddresses(%q) = %v, %q, %v; want %v, %q", tc.nodeIP, addrs, provided, err, tc.addrs, tc.provided)
		}
	}
	if _, provided, _ := CloudAddresses("0.0.0.0", "n1"); provided != "" {
		t.Errorf("an unspecified --node-ip is provided as %q", provided)
	}
}

// The options' quantities with their canonical form worked out once encode to the same bytes, in
// protobuf and JSON, as the quantities given; the given list is left as it was.
func TestWithStringsSameWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    resource.Quantity
	}{
		{"cores", *resource.NewQuantity(4, resource.DecimalSI)},
		{"bytes", *resource.NewQuantity(8<<30, resource.BinarySI)},
		{"bytes not a power", *resource.NewQuantity(8<<30-100<<20-1, resource.BinarySI)},
		{"millicores", *resource.NewMilliQuantity(1500, resource.DecimalSI)},
		{"parsed, not canonical", resource.MustParse("1.5Gi")},
		{"parsed", resource.MustParse("110")},
		{"scaled", *resource.NewScaledQuantity(5, resource.Mega)},
		{"decimal exponent", resource.MustParse("12e6")},
		{"zero", resource.Quantity{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			given := corev1.ResourceList{corev1.ResourceMemory: tc.q}
			before := given.DeepCopy()
			cached := withStrings(given)
			for _, enc := range []func(corev1.NodeStatus) ([]byte, error){
				func(s corev1.NodeStatus) ([]byte, error) { return s.Marshal() },
				func(s corev1.NodeStatus) ([]byte, error) { return json.Marshal(s) },
			} {
				want, err := enc(corev1.NodeStatus{Capacity: given})
				if err != nil {
					t.Fatal(err)
				}
				got, err := enc(corev1.NodeStatus{Capacity: cached})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("encoded %q, given %q", got, want)
				}
			}
			if !reflect.DeepEqual(given, before) {
				t.Errorf("the given list changed")
			}
		})
	}
	if withStrings(nil) != nil {
		t.Error("a nil list is not nil")
	}
}
