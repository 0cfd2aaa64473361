package cpumanager

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/cpuset"

	"orch.io/orch/components/orchlet/topologymanager"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
)

// sysfs is two sockets of two cores of two threads, CPUs 0-7 online and 8 offline, NUMA node 0
// on socket 0 and node 1 on socket 1.
func sysfs() fstest.MapFS {
	fsys := fstest.MapFS{"online": {Data: []byte("0-7\n")}}
	for id := 0; id <= 8; id++ {
		dir := "cpu" + itoa(id)
		socket, core := id/4, (id%4)/2
		fsys[dir+"/topology/core_id"] = &fstest.MapFile{Data: []byte(itoa(core) + "\n")}
		fsys[dir+"/topology/physical_package_id"] = &fstest.MapFile{Data: []byte(itoa(socket) + "\n")}
		fsys[dir+"/node"+itoa(socket)] = &fstest.MapFile{Mode: os.ModeSymlink}
	}
	return fsys
}

func itoa(i int) string { return strconv.Itoa(i) }

func topology(t *testing.T) *Topology {
	t.Helper()
	topo, err := Discover(sysfs())
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestDiscover(t *testing.T) {
	topo := topology(t)
	// Without caches described, a CPU's uncore cache is its socket.
	want := []CPUInfo{
		{0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {2, 2, 0, 0, 0}, {3, 2, 0, 0, 0},
		{4, 4, 1, 1, 1}, {5, 4, 1, 1, 1}, {6, 6, 1, 1, 1}, {7, 6, 1, 1, 1},
	}
	if len(topo.CPUs) != len(want) {
		t.Fatalf("%+v", topo.CPUs)
	}
	for i := range want {
		if topo.CPUs[i] != want[i] {
			t.Errorf("cpu %d: %+v, want %+v", i, topo.CPUs[i], want[i])
		}
	}
	bad := sysfs()
	bad["online"] = &fstest.MapFile{Data: []byte("0-9")}
	if _, err := Discover(bad); err == nil {
		t.Error("a CPU without topology files was accepted")
	}

	// A split L3: on socket 0 each core has its own (ids 10 and 12, shared by its 2 threads, not
	// by the node's 4), an uncore cache; socket 1's L3 (id 20) is shared by the whole node, so
	// its uncore cache is the socket. L1 and L2 are never uncore.
	caches := sysfs()
	cache := func(cpu, index, level, id int, shared string) {
		dir := "cpu" + itoa(cpu) + "/cache/index" + itoa(index) + "/"
		caches[dir+"level"] = &fstest.MapFile{Data: []byte(itoa(level) + "\n")}
		caches[dir+"id"] = &fstest.MapFile{Data: []byte(itoa(id) + "\n")}
		caches[dir+"shared_cpu_map"] = &fstest.MapFile{Data: []byte(shared + "\n")}
	}
	for _, core := range []int{0, 2, 4, 6} {
		cache(core, 0, 1, core, "00000000,00000003")
		cache(core, 1, 2, core, "00000000,00000003")
	}
	cache(0, 2, 3, 10, "00000000,00000003")
	cache(2, 2, 3, 12, "00000000,0000000c")
	cache(4, 2, 3, 20, "00000000,000000f0")
	cache(6, 2, 3, 20, "00000000,000000f0")
	topo, err := Discover(caches)
	if err != nil {
		t.Fatal(err)
	}
	var uncore []int
	for _, c := range topo.CPUs {
		uncore = append(uncore, c.UncoreCache)
	}
	if want := []int{10, 10, 12, 12, 1, 1, 1, 1}; !slices.Equal(uncore, want) {
		t.Errorf("uncore caches %v, want %v", uncore, want)
	}
	caches["cpu2/cache/index2/shared_cpu_map"] = &fstest.MapFile{Data: []byte("zz\n")}
	if _, err := Discover(caches); err == nil || !strings.Contains(err.Error(), "shared_cpu_map") {
		t.Errorf("a malformed shared_cpu_map: %v", err)
	}
}

type activePods map[types.UID]bool

func newManager(t *testing.T, dir string, active activePods, tune ...func(*Options)) (*Manager, error) {
	o := Options{
		Policy: PolicyStatic, ReservedCPUs: "0", Topology: topology(t), RootDir: dir,
		Clock: clock.NewMock(), Runtime: nil, ActivePods: func() map[types.UID]bool { return active },
		PodUIDLabel: "uid", ContainerNameLabel: "name", ReconcilePeriod: 10 * time.Second,
	}
	o.Runtime = noRuntime{}
	for _, f := range tune {
		f(&o)
	}
	return New(o)
}

// noRuntime runs no container.
type noRuntime struct{ Runtime }

func (noRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return nil, nil
}

func pod(uid string, cpu, memory string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
	for _, name := range containers {
		lim := corev1.ResourceList{}
		if cpu != "" {
			lim[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			lim[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: lim}})
	}
	return p
}

// TestTake: whole sockets, then whole cores, then single CPUs from the cores and sockets already
// in use, as the kubelet packs them.
func TestTake(t *testing.T) {
	m, err := newManager(t, t.TempDir(), activePods{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		free string
		n    int
		want string
	}{
		{"1-7", 1, "1"},       // the free thread of the reserved CPU's core
		{"1-7", 2, "2-3"},     // a whole core on the socket with fewer free CPUs
		{"1-7", 3, "1-3"},     // a whole core, then the lone thread
		{"1-7", 4, "4-7"},     // a whole socket
		{"1-7", 5, "1,4-7"},   // a socket, then a lone thread
		{"2-3,5,7", 2, "2-3"}, // the only whole core
		{"1,3,5,7", 2, "1,3"}, // no whole core: threads of the fuller socket
		{"0-7", 8, "0-7"},
	}
	for _, tc := range cases {
		free, _ := cpuset.Parse(tc.free)
		got, err := m.takeByTopology(free, tc.n)
		if err != nil || got.String() != tc.want {
			t.Errorf("take %d of %s = %s, %v; want %s", tc.n, tc.free, got, err, tc.want)
		}
	}
	free, _ := cpuset.Parse("1-2")
	if _, err := m.takeByTopology(free, 3); err == nil {
		t.Error("took 3 of 2 CPUs")
	}
}

func readCheckpoint(t *testing.T, dir string) checkpoint {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatal(err)
	}
	if cp.Checksum != cp.sum() {
		t.Fatalf("checkpoint %s: checksum %d, want %d", data, cp.Checksum, cp.sum())
	}
	return cp
}

// TestStatic: Guaranteed containers with whole CPUs get exclusive CPUs out of the shared pool but
// never the reserved ones; others run on the shared pool; the state is checkpointed, restored at
// start, and the CPUs of pods gone return to the pool.
func TestStatic(t *testing.T) {
	dir := t.TempDir()
	active := activePods{"a": true, "b": true, "c": true}
	m, err := newManager(t, dir, active)
	if err != nil {
		t.Fatal(err)
	}
	if cp := readCheckpoint(t, dir); cp.PolicyName != "static" || cp.DefaultCPUSet != "0-7" {
		t.Fatalf("fresh checkpoint %+v", cp)
	}
	a := pod("a", "2", "1Gi", "app", "side")
	cases := []struct {
		pod  *corev1.Pod
		c    int
		want string
	}{
		{a, 0, "2-3"},
		{a, 1, "4-5"},
		{a, 0, "2-3"}, // the same container again keeps its CPUs
		{pod("b", "1500m", "1Gi", "app"), 0, "0-1,6-7"}, // fractional: shared
		{pod("b", "2", "", "app"), 0, "0-1,6-7"},        // not Guaranteed: shared
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "b"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}}}, 0, "0-1,6-7"}, // Burstable: shared
		{pod("c", "1", "1Gi", "app"), 0, "1"},
	}
	for i, tc := range cases {
		got, err := m.CPUSet(tc.pod, &tc.pod.Spec.Containers[tc.c])
		if err != nil || got != tc.want {
			t.Fatalf("case %d: cpuset %q, %v; want %q", i, got, err, tc.want)
		}
	}
	cp := readCheckpoint(t, dir)
	if cp.DefaultCPUSet != "0,6-7" || cp.Entries["a"]["app"] != "2-3" || cp.Entries["a"]["side"] != "4-5" || cp.Entries["c"]["app"] != "1" {
		t.Fatalf("checkpoint %+v", cp)
	}
	if _, err := m.CPUSet(pod("d", "3", "1Gi", "app"), &corev1.Container{Name: "app", Resources: pod("d", "3", "1Gi", "app").Spec.Containers[0].Resources}); err == nil ||
		!strings.Contains(err.Error(), "not enough cpus available to satisfy request: requested=3, available=2") {
		t.Fatalf("over-asking: %v", err)
	}

	// A restart restores the assignments.
	m, err = newManager(t, dir, active)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.CPUSet(a, &a.Spec.Containers[1]); got != "4-5" {
		t.Fatalf("after a restart: %q", got)
	}
	// Pod a is gone: its CPUs serve the next once a reconcile takes them back, the second after
	// the restart (the first spares the restored pods, which the pods may not list yet).
	delete(active, "a")
	e := pod("e", "4", "1Gi", "app")
	m.Reconcile(context.Background())
	if _, err := m.CPUSet(e, &e.Spec.Containers[0]); err == nil {
		t.Fatal("the first reconcile after a restart took back the CPUs of a restored pod")
	}
	m.Reconcile(context.Background())
	if got, err := m.CPUSet(e, &e.Spec.Containers[0]); err != nil || got != "4-7" { // a whole socket again, with a's 4-5
		t.Fatalf("after pod a went: %q, %v", got, err)
	}
}

// TestStartRefuses: a checkpoint of another policy, a corrupted one, one that does not fit the
// machine, and a static policy without reserved CPUs are refused at start.
func TestStartRefuses(t *testing.T) {
	write := func(dir string, cp checkpoint, sum bool) {
		if sum {
			cp.Checksum = cp.sum()
		} else {
			cp.Checksum = 12345
		}
		data, _ := json.Marshal(cp)
		if err := os.WriteFile(filepath.Join(dir, StateFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		setup func(dir string)
		tune  func(*Options)
		want  string
	}{
		{"other policy", func(dir string) { write(dir, checkpoint{PolicyName: "none", DefaultCPUSet: "0-7"}, true) }, nil,
			`configured policy "static" differs from state checkpoint policy "none"`},
		{"corrupted", func(dir string) { write(dir, checkpoint{PolicyName: "static", DefaultCPUSet: "0-7"}, false) }, nil,
			"checkpoint is corrupted"},
		{"other CPUs", func(dir string) { write(dir, checkpoint{PolicyName: "static", DefaultCPUSet: "0-3"}, true) }, nil,
			`current set of available CPUs "0-7" doesn't match with CPUs in state "0-3"`},
		{"no reserved CPUs", func(string) {}, func(o *Options) { o.ReservedCPUs = "" },
			"requires systemreserved.cpu + kubereserved.cpu to be greater than zero, or --reserved-cpus"},
		{"reserved not online", func(string) {}, func(o *Options) { o.ReservedCPUs = "8" },
			"--reserved-cpus (reservedSystemCPUs): 8 is not a subset of the online CPUs 0-7"},
		{"reserved garbage", func(string) {}, func(o *Options) { o.ReservedCPUs = "x" },
			`--reserved-cpus (reservedSystemCPUs): "x"`},
		{"all reserved", func(string) {}, func(o *Options) { o.ReservedCPUs = "0-7" },
			"leaves none to assign"},
		{"unknown policy", func(string) {}, func(o *Options) { o.Policy = "dynamic" },
			`--cpu-manager-policy (cpuManagerPolicy): unknown policy "dynamic"`},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		tc.setup(dir)
		tune := []func(*Options){}
		if tc.tune != nil {
			tune = append(tune, tc.tune)
		}
		if _, err := newManager(t, dir, activePods{}, tune...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// Reserved by count: the CPUs are taken by topology, a whole core.
	m, err := newManager(t, t.TempDir(), activePods{}, func(o *Options) { o.ReservedCPUs, o.ReservedCount = "", 2 })
	if err != nil || m.reserved.String() != "0-1" {
		t.Fatalf("reserved %s, %v; want 0-1", m.reserved, err)
	}
	// The none policy assigns nothing and writes nothing.
	dir := t.TempDir()
	m, err = newManager(t, dir, activePods{}, func(o *Options) { o.Policy = PolicyNone })
	if err != nil {
		t.Fatal(err)
	}
	p := pod("a", "2", "1Gi", "app")
	if got, err := m.CPUSet(p, &p.Spec.Containers[0]); got != "" || err != nil {
		t.Fatalf("none: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); !os.IsNotExist(err) {
		t.Fatalf("none wrote a checkpoint: %v", err)
	}
}

// TestReconcile: each running container of an active pod is given its cpuset through the CRI
// once, and again only when it changes.
func TestReconcile(t *testing.T) {
	mock := clock.NewMock()
	rt, sock := fakecritest.Start(t, fakecri.Options{Clock: mock, Seed: 1})
	client, _ := fakecritest.Clients(t, sock)
	ctx := context.Background()
	rt.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	run := func(uid, name string) string {
		sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: uid, Namespace: "default", Uid: uid}}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
			Labels: map[string]string{"uid": uid, "name": name},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			t.Fatal(err)
		}
		return c.ContainerId
	}
	shared, exclusive := run("a", "web"), run("b", "db")
	active := activePods{"a": true, "b": true}
	m, err := newManager(t, t.TempDir(), active, func(o *Options) { o.Runtime = client })
	if err != nil {
		t.Fatal(err)
	}
	cpus := func(id string) string {
		st, err := client.ContainerStatus(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		return st.GetStatus().GetResources().GetLinux().GetCpusetCpus()
	}
	updates := func() int { return len(rt.Calls(calllog.Filter{Method: "UpdateContainerResources"})) }
	if err := m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if cpus(shared) != "0-7" || cpus(exclusive) != "0-7" || updates() != 2 {
		t.Fatalf("first reconcile: %q %q, %d updates", cpus(shared), cpus(exclusive), updates())
	}
	m.Reconcile(ctx)
	if updates() != 2 {
		t.Fatalf("a reconcile with nothing changed made %d updates", updates()-2)
	}
	b := pod("b", "2", "1Gi", "db")
	if _, err := m.CPUSet(b, &b.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	m.Reconcile(ctx)
	if cpus(shared) != "0-1,4-7" || cpus(exclusive) != "2-3" || updates() != 4 {
		t.Fatalf("after an exclusive assignment: %q %q, %d updates", cpus(shared), cpus(exclusive), updates())
	}
	delete(active, "b")
	m.Reconcile(ctx)
	if cpus(shared) != "0-7" || updates() != 5 {
		t.Fatalf("after pod b went: %q, %d updates", cpus(shared), updates())
	}
}

// TestInitContainerCPUsReused: an app container reuses the CPUs of the init containers that ran
// before it, and a sidecar's are not reused.
func TestInitContainerCPUsReused(t *testing.T) {
	m, err := newManager(t, t.TempDir(), activePods{"a": true}, func(o *Options) { o.ReservedCPUs = "0-3" })
	if err != nil {
		t.Fatal(err)
	}
	limits := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "a"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init1", Resources: limits}, {Name: "init2", Resources: limits}},
		Containers:     []corev1.Container{{Name: "app", Resources: limits}},
	}}
	var sets []string
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		set, err := m.CPUSet(p, &c)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		sets = append(sets, set)
	}
	if sets[0] != "4-6" || sets[1] != "4-6" || sets[2] != "4-6" {
		t.Fatalf("init1, init2, app: %v; want each on the CPUs of the one before", sets)
	}
	side := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "b"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "side", Resources: limits, RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "app", Resources: limits}},
	}}
	m, err = newManager(t, t.TempDir(), activePods{"b": true}, func(o *Options) { o.ReservedCPUs = "0-1" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.CPUSet(side, &side.Spec.InitContainers[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.CPUSet(side, &side.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := cpuset.Parse(a); func() bool { y, _ := cpuset.Parse(b); return x.Intersection(y).Size() > 0 }() {
		t.Fatalf("sidecar %s and app %s share CPUs", a, b)
	}
}

// strict-cpu-reservation keeps the reserved CPUs out of the shared pool as well as the exclusive
// ones, from the first checkpoint on; a checkpoint that shares them is refused, and a
// checkpoint without them is refused without the option.
func TestStrictCPUReservation(t *testing.T) {
	strict := func(o *Options) {
		o.ReservedCPUs = "0-1"
		o.PolicyOptions = map[string]string{"strict-cpu-reservation": "true"}
		o.Enabled = func(gate string) bool { return gate == "CPUManagerPolicyBetaOptions" }
	}
	dir := t.TempDir()
	m, err := newManager(t, dir, activePods{"a": true}, strict)
	if err != nil {
		t.Fatal(err)
	}
	if cp := readCheckpoint(t, dir); cp.DefaultCPUSet != "2-7" {
		t.Fatalf("checkpoint %+v, want the reserved CPUs out of the default set", cp)
	}
	shared := pod("a", "500m", "1Gi", "app")
	if got, err := m.CPUSet(shared, &shared.Spec.Containers[0]); err != nil || got != "2-7" {
		t.Errorf("shared container: %q, %v; want 2-7", got, err)
	}
	if _, err := newManager(t, dir, activePods{}, strict); err != nil {
		t.Errorf("restoring its own checkpoint: %v", err)
	}
	if _, err := newManager(t, dir, activePods{}, func(o *Options) { o.ReservedCPUs = "0-1" }); err == nil || !strings.Contains(err.Error(), `not all reserved cpus: "0-1" are present in defaultCpuSet: "2-7"`) {
		t.Errorf("the strict checkpoint without the option: %v", err)
	}
	if _, err := newManager(t, t.TempDir(), activePods{}); err != nil {
		t.Fatal(err)
	}
	loose := t.TempDir()
	if _, err := newManager(t, loose, activePods{}, func(o *Options) { o.ReservedCPUs = "0-1" }); err != nil {
		t.Fatal(err)
	}
	if _, err := newManager(t, loose, activePods{}, strict); err == nil || !strings.Contains(err.Error(), `some of strictly reserved cpus: "0-1" are present in defaultCpuSet: "0-7"`) {
		t.Errorf("a sharing checkpoint with the option: %v", err)
	}
}

// full-pcpus-only, as the kubelet's static policy: a container asks for whole cores or its pod
// is refused at admission (SMTAlignmentError), the pod's exclusive CPUs must fit in the cores
// wholly free, and a container is given whole cores only (never CPU 1, whose sibling 0 is
// reserved).
func TestFullPCPUsOnly(t *testing.T) {
	m, err := newManager(t, t.TempDir(), activePods{"a": true, "b": true}, func(o *Options) { o.PolicyOptions = map[string]string{"full-pcpus-only": "true"} })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod         *corev1.Pod
		ok          bool
		reason, msg string
	}{
		{pod("x", "3", "1Gi", "app"), false, ReasonSMTAlignmentError, "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"},
		{pod("x", "8", "1Gi", "app"), false, ReasonSMTAlignmentError, "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 6, requested CPUs = 8, CPUs per core = 2"},
		{pod("x", "2", "1Gi", "app", "side"), true, "", ""},
		{pod("x", "500m", "1Gi", "app"), true, "", ""}, // shared: nothing to align
		{pod("x", "3", "", "app"), true, "", ""},       // not Guaranteed: shared
	} {
		ok, reason, msg := m.Admit(tc.pod)
		if ok != tc.ok || reason != tc.reason || msg != tc.msg {
			t.Errorf("%v: %v %q %q, want %v %q %q", tc.pod.Spec.Containers[0].Resources.Limits, ok, reason, msg, tc.ok, tc.reason, tc.msg)
		}
	}
	a := pod("a", "4", "1Gi", "app")
	if ok, _, _ := m.Admit(a); !ok {
		t.Fatal("a refused")
	}
	got, err := m.CPUSet(a, &a.Spec.Containers[0])
	if err != nil || got != "4-7" {
		t.Fatalf("a: %q, %v; want a whole socket of whole cores", got, err)
	}
	b := pod("b", "4", "1Gi", "app")
	if ok, _, msg := m.Admit(b); ok || msg != "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 2, requested CPUs = 4, CPUs per core = 2" {
		t.Errorf("b with 2 whole CPUs left: %v %q", ok, msg)
	}
	// Without the option the same pod takes CPU 1 beside the whole core 2-3.
	loose, err := newManager(t, t.TempDir(), activePods{"b": true})
	if err != nil {
		t.Fatal(err)
	}
	three := pod("b", "3", "1Gi", "app")
	if ok, _, _ := loose.Admit(three); !ok {
		t.Fatal("admission without the option refused")
	}
	if got, err := loose.CPUSet(three, &three.Spec.Containers[0]); err != nil || got != "1-3" {
		t.Errorf("without the option: %q, %v", got, err)
	}
}

// fourNUMA is two sockets of two NUMA nodes each, a node being two cores of two threads: CPUs
// 0-3 on node 0, 4-7 on node 1 (socket 0), 8-11 on node 2, 12-15 on node 3 (socket 1).
func fourNUMA(t *testing.T) *Topology {
	t.Helper()
	fsys := fstest.MapFS{"online": {Data: []byte("0-15\n")}}
	for id := 0; id <= 15; id++ {
		dir := "cpu" + itoa(id)
		fsys[dir+"/topology/core_id"] = &fstest.MapFile{Data: []byte(itoa((id%8)/2) + "\n")}
		fsys[dir+"/topology/physical_package_id"] = &fstest.MapFile{Data: []byte(itoa(id/8) + "\n")}
		fsys[dir+"/node"+itoa(id/4)] = &fstest.MapFile{Mode: os.ModeSymlink}
	}
	topo, err := Discover(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// The topology manager's policies over the CPU manager's hints on a four-NUMA machine, as the
// kubelet's: single-numa-node admits what one node holds and refuses the rest with
// TopologyAffinityError; restricted admits the narrowest preferred placement; the CPUs are
// allocated at admission from the hint's nodes; the pod scope places the pod's containers
// together.
func TestTopologyManagerPolicies(t *testing.T) {
	topologies := map[*Manager]*topologymanager.Manager{}
	manager := func(policy, scope string) *Manager {
		m, err := newManager(t, t.TempDir(), activePods{"a": true, "b": true, "c": true}, func(o *Options) {
			o.Topology, o.ReservedCPUs, o.TopologyPolicy = fourNUMA(t), "0", policy
		})
		if err != nil {
			t.Fatal(err)
		}
		topologies[m] = topologyManager(t, m, policy, scope)
		return m
	}
	admit := func(m *Manager, p *corev1.Pod) (bool, string, string) { return topologies[m].Admit(p) }

	single := manager("single-numa-node", "container")
	// Node 0 has 3 free CPUs (0 is reserved): 4 CPUs fit on node 1, 2 or 3 alone.
	a := pod("a", "4", "1Gi", "app")
	if ok, reason, msg := admit(single, a); !ok {
		t.Fatalf("4 CPUs under single-numa-node refused: %s %s", reason, msg)
	}
	if got, _ := single.CPUSet(a, &a.Spec.Containers[0]); got != "4-7" {
		t.Errorf("a got %q, want node 1's CPUs 4-7", got)
	}
	if ok, reason, msg := admit(single, pod("b", "6", "1Gi", "app")); ok || reason != "TopologyAffinityError" || msg != "Resources cannot be allocated with Topology locality" {
		t.Errorf("6 CPUs under single-numa-node: %v %q %q", ok, reason, msg)
	}
	if cp := single.state.assignments["b"]; len(cp) != 0 {
		t.Errorf("the refused pod holds CPUs: %v", cp)
	}
	shared := pod("c", "500m", "1Gi", "app")
	if ok, _, _ := admit(single, shared); !ok {
		t.Error("a pod without exclusive CPUs refused")
	}

	restricted := manager("restricted", "container")
	b := pod("b", "6", "1Gi", "app")
	if ok, reason, msg := admit(restricted, b); !ok {
		t.Fatalf("6 CPUs under restricted refused: %s %s", reason, msg)
	}
	// Two nodes are the narrowest that hold 6, the lowest first: nodes 0 and 1, 7 CPUs free.
	if got, _ := restricted.CPUSet(b, &b.Spec.Containers[0]); got != "2-7" {
		t.Errorf("b got %q, want node 1 and a core of node 0: 2-7", got)
	}
	set := restricted.state.assignments["b"]["app"]
	if nodesOf(restricted, set) != 2 {
		t.Errorf("b's 6 CPUs %s span %d NUMA nodes, want 2", set, nodesOf(restricted, set))
	}
	if ok, _, _ := admit(restricted, pod("c", "16", "1Gi", "app")); ok {
		t.Error("16 CPUs (more than are free) admitted under restricted")
	}

	podScope := manager("single-numa-node", "pod")
	two := pod("a", "2", "1Gi", "app", "side")
	if ok, reason, msg := admit(podScope, two); !ok {
		t.Fatalf("pod scope: %s %s", reason, msg)
	}
	app, side := podScope.state.assignments["a"]["app"], podScope.state.assignments["a"]["side"]
	if nodesOf(podScope, app.Union(side)) != 1 {
		t.Errorf("pod scope placed app %s and side %s on different nodes", app, side)
	}
	if ok, reason, _ := admit(podScope, pod("b", "3", "1Gi", "app", "side")); ok || reason != "TopologyAffinityError" {
		t.Errorf("pod scope: 6 CPUs of a pod on one node admitted (%v %s)", ok, reason)
	}
}

func nodesOf(m *Manager, set cpuset.CPUSet) int {
	nodes := map[int]bool{}
	for _, id := range set.List() {
		nodes[m.machine.details[id].NUMANode] = true
	}
	return len(nodes)
}

// The NUMA distances are read from sysfs.
func TestReadDistances(t *testing.T) {
	d, err := ReadDistances(fstest.MapFS{
		"node0/distance": {Data: []byte("10 21\n")}, "node1/distance": {Data: []byte("21 10\n")}, "possible": {Data: []byte("0-1\n")},
	})
	if err != nil || len(d) != 2 || d[0][1] != 21 || d[1][1] != 10 {
		t.Fatalf("distances %v, %v", d, err)
	}
	if d, err := ReadDistances(fstest.MapFS{}); err != nil || len(d) != 0 {
		t.Errorf("no NUMA: %v, %v", d, err)
	}
}

// topologyManager is the topology manager of policy and scope on m's machine with m as its
// first provider, as the agent assembles it.
func topologyManager(t *testing.T, m *Manager, policy, scope string, others ...topologymanager.Provider) *topologymanager.Manager {
	t.Helper()
	tm, err := topologymanager.New(policy, scope, topologymanager.Options{MaxNUMANodes: topologymanager.DefaultMaxNUMANodes},
		m.o.Topology.NUMANodes(), m.o.Topology.Distances, append([]topologymanager.Provider{m}, others...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}
