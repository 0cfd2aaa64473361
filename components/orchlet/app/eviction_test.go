package app

import (
	"testing"

	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/host"
)

// --kernel-memcg-notification arms thresholds on this host's cgroup v1 memory controller, the
// allocatable one on the pods' cgroup; without the option nothing is armed, and a host without
// the controller says why.
func TestHostMemcg(t *testing.T) {
	if m, why := hostMemcg(parse(t, "--enable-server=false"), host.NewReal()); m != nil || why != "" {
		t.Fatalf("without the option: %+v, %q", m, why)
	}
	for _, tc := range []struct {
		args []string
		pods string
	}{
		{[]string{"--kernel-memcg-notification"}, "/orchpods"},
		{[]string{"--kernel-memcg-notification", "--cgroup-root=/node"}, "/node/orchpods"},
		{[]string{"--kernel-memcg-notification", "--cgroup-driver=systemd"}, "/orchpods.slice"},
		{[]string{"--kernel-memcg-notification", "--cgroups-per-qos=false", "--enforce-node-allocatable="}, ""},
	} {
		m, why := hostMemcg(parse(t, append(tc.args, "--enable-server=false")...), host.NewReal())
		if m == nil {
			// This host has no cgroup v1 memory controller: the reason is all there is to see.
			if why == "" {
				t.Fatalf("%v: no notifications and no reason", tc.args)
			}
			continue
		}
		if m.PodsCgroup != tc.pods || m.MemoryRoot == "" {
			t.Errorf("%v: %+v, want the pods' cgroup %q", tc.args, m, tc.pods)
		}
		if _, ok := m.Factory.(eviction.LinuxNotifierFactory); !ok {
			t.Errorf("%v: factory %T", tc.args, m.Factory)
		}
	}
}

// The eviction manager observes the machine under the host's procfs and sysfs, a simulated
// machine's not at all; the pods' allocatable memory is the host's memory less the reservations.
func TestNewObserver(t *testing.T) {
	h := host.NewFake()
	opts := parse(t, "--kube-reserved=memory=1Gi", "--system-reserved=memory=512Mi")
	res, err := resourcesOf(opts, h)
	if err != nil {
		t.Fatal(err)
	}
	o := newObserver(opts, h, res, nil, nil).(*eviction.CRIObserver)
	if _, _, _, err := o.Node.Memory(); err == nil || o.AllocatableMemory != 8<<30-1536<<20 {
		t.Errorf("simulated machine: memory observed (%v), allocatable %d", err, o.AllocatableMemory)
	}
	if m, why := hostMemcg(parse(t, "--kernel-memcg-notification"), h); m != nil || why != errSimulated.Error() {
		t.Errorf("simulated machine's memcg: %+v, %q", m, why)
	}
	h.ProcRoot, h.SysRoot = "/host/proc", "/host/sys"
	if node := newObserver(parse(t), h, res, nil, nil).(*eviction.CRIObserver).Node; node != (eviction.HostNode{CgroupRoot: "/host/sys/fs/cgroup", ProcRoot: "/host/proc"}) {
		t.Errorf("observed node %+v", node)
	}
}
