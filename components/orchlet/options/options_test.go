package options

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apiversion "k8s.io/apimachinery/pkg/version"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

var build = apiversion.Info{Major: "0", Minor: "1", GitVersion: "v0.1.0", GoVersion: "go1.26", Platform: "linux/amd64"}

func mustParse(t *testing.T, args ...string) *Options {
	t.Helper()
	o, err := Parse(args, build)
	if err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	return o
}

func TestEverySpecOptionExistsWithItsDefaultAndDeprecation(t *testing.T) {
	f := defaultFlags()
	sets := newFlagSets(&f, v1beta1.NewDefault(), &versionValue{build: &apiversion.Info{}})
	fs := sets.all()
	help := Usage()
	for _, opt := range specOptions {
		fl := fs.Lookup(opt.name)
		if fl == nil {
			t.Errorf("--%s is not defined", opt.name)
			continue
		}
		if !strings.Contains(help, "--"+opt.name+" ") {
			t.Errorf("help does not list --%s", opt.name)
		}
		want := opt.def
		switch want {
		case "''", "none":
			if opt.name != "cpu-manager-policy" && opt.name != "topology-manager-policy" {
				want = ""
			}
		case "unix:///run/<runtime>/<runtime>.sock":
			want = "unix:///run/containerd/containerd.sock"
		}
		got := fl.DefValue
		if (got == "false" || got == "0" || got == "0s") && want == "" {
			got = ""
		}
		if opt.name == "version" || opt.name == "help" || opt.name == "v" {
			continue
		}
		if got != want {
			t.Errorf("--%s default = %q, SPEC.md says %q", opt.name, got, want)
		}
		isC := sets.deprecated[opt.name] == deprecatedForConfig
		if isC != opt.c {
			t.Errorf("--%s: deprecated for --config = %t, SPEC.md's C mark = %t", opt.name, isC, opt.c)
		}
	}
	removal := map[string]string{
		"experimental-allocatable-ignore-eviction": "1.25 or later",
		"experimental-mounter-path":                "1.25 or later",
		"pod-infra-container-image":                "1.35",
		"maximum-dead-containers":                  "eviction",
		"maximum-dead-containers-per-container":    "eviction",
		"minimum-container-ttl-duration":           "eviction",
	}
	for name, want := range removal {
		if !strings.Contains(sets.deprecated[name], want) {
			t.Errorf("--%s deprecation note %q lacks %q", name, sets.deprecated[name], want)
		}
	}
}

func TestHelpListsGatesAndGroups(t *testing.T) {
	o := mustParse(t, "--help")
	if o.Action != ActionHelp {
		t.Fatalf("action = %v", o.Action)
	}
	for _, want := range []string{
		"QOSReserved=true|false (ALPHA - default=false)",
		"RotateOrchletServerCertificate=true|false (BETA - default=true)",
		"ImageVolume=true|false (BETA - default=false)",
		"Generic flags:", "Logging flags:", "Eviction and garbage collection flags:",
		"(default 110)", "(default 2m0s)",
		"(DEPRECATED: This parameter should be set via the config file specified by the orchlet's --config flag.)",
	} {
		if !strings.Contains(o.Output, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if h := mustParse(t, "-h"); h.Action != ActionHelp {
		t.Error("-h does not ask for help")
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		args    []string
		action  Action
		output  string
		version string
		wantErr string
	}{
		{[]string{"--version"}, ActionVersion, "orch v0.1.0\n", "v0.1.0", ""},
		{[]string{"--version=true"}, ActionVersion, "orch v0.1.0\n", "v0.1.0", ""},
		{[]string{"--version=raw"}, ActionVersion, `version.Info{Major:"0", Minor:"1", `, "v0.1.0", ""},
		{[]string{"--version=false"}, ActionRun, "", "v0.1.0", ""},
		{[]string{"--version=v0.1.0-rc.1"}, ActionRun, "", "v0.1.0-rc.1", ""},
		{[]string{"--version=v0.1.0-rc.1", "--version"}, ActionVersion, "orch v0.1.0-rc.1\n", "v0.1.0-rc.1", ""},
		{[]string{"--version=v0.2.0"}, 0, "", "", "must keep the build's major.minor.patch 0.1.0"},
		{[]string{"--version=maybe"}, 0, "", "", `invalid argument "maybe" for "--version"`},
	}
	for _, tt := range tests {
		o, err := Parse(tt.args, build)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if o.Action != tt.action || !strings.HasPrefix(o.Output, tt.output) || o.Version.GitVersion != tt.version {
			t.Errorf("%q: action %v output %q version %q; want %v %q %q", tt.args, o.Action, o.Output, o.Version.GitVersion, tt.action, tt.output, tt.version)
		}
	}
}

func TestFlagForms(t *testing.T) {
	o := mustParse(t,
		"--max-pods=12", "--port", "1234", "--cgroups-per-qos=false", "--serialize-image-pulls=false",
		"--sync-frequency=2m0s", "--runtime-request-timeout", "90s",
		"--eviction-hard=memory.available<1Gi,nodefs.available<10%",
		"--eviction-soft=memory.available<2Gi", "--eviction-soft-grace-period=memory.available=1m30s",
		"--kube-reserved=cpu=100m,memory=1Gi", "--kube-reserved=pid=100",
		"--cluster-dns=10.0.0.10", "--cluster-dns=10.0.0.11,10.0.0.12",
		"--manifest-url-header=A:1,B:2", "--manifest-url-header=A:3",
		"--register-with-taints=k1=v1:NoSchedule,k2:NoExecute",
		"--system-reserved=memory=1Gi", "--reserved-memory=0:memory=2Gi;1:memory=1Gi", "--reserved-memory=2:hugepages-2Mi=0",
		"--eviction-hard=memory.available<1Gi",
		"--node-labels=orchlet.orch.io/role=worker,example.com/x=y,node.orch.io/pool=a",
		"--log-flush-frequency=2s", "-v=3", "--vmodule=foo=4",
		"--log_flush_frequency=3s",
	)
	c := o.Config
	if c.MaxPods != 12 || c.Port != 1234 || c.CgroupsPerQOS || c.SerializeImagePulls {
		t.Errorf("scalars: maxPods %d port %d cgroupsPerQOS %t serializeImagePulls %t", c.MaxPods, c.Port, c.CgroupsPerQOS, c.SerializeImagePulls)
	}
	if c.SyncFrequency.Duration != 2*time.Minute || c.RuntimeRequestTimeout.Duration != 90*time.Second {
		t.Errorf("durations: %v %v", c.SyncFrequency, c.RuntimeRequestTimeout)
	}
	if len(c.EvictionHard) != 2 || c.EvictionHard["memory.available"] != "1Gi" || c.EvictionHard["nodefs.available"] != "10%" {
		t.Errorf("evictionHard = %v", c.EvictionHard)
	}
	if len(c.KubeReserved) != 3 || c.KubeReserved["pid"] != "100" {
		t.Errorf("kubeReserved = %v (a repeated map option adds to the map)", c.KubeReserved)
	}
	if strings.Join(c.ClusterDNS, " ") != "10.0.0.10 10.0.0.11 10.0.0.12" {
		t.Errorf("clusterDNS = %v", c.ClusterDNS)
	}
	if strings.Join(c.StaticPodURLHeader["A"], " ") != "1 3" || strings.Join(c.StaticPodURLHeader["B"], " ") != "2" {
		t.Errorf("staticPodURLHeader = %v", c.StaticPodURLHeader)
	}
	wantTaints := []corev1.Taint{{Key: "k1", Value: "v1", Effect: corev1.TaintEffectNoSchedule}, {Key: "k2", Effect: corev1.TaintEffectNoExecute}}
	if len(c.RegisterWithTaints) != 2 || c.RegisterWithTaints[0] != wantTaints[0] || c.RegisterWithTaints[1] != wantTaints[1] {
		t.Errorf("registerWithTaints = %v", c.RegisterWithTaints)
	}
	if len(c.ReservedMemory) != 3 || c.ReservedMemory[1].NumaNode != 1 || c.ReservedMemory[2].NumaNode != 2 {
		t.Errorf("reservedMemory = %v", c.ReservedMemory)
	}
	if q := c.ReservedMemory[0].Limits[corev1.ResourceMemory]; q.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("reservedMemory[0] memory = %v", q.String())
	}
	if o.Flags.NodeLabels["orchlet.orch.io/role"] != "worker" || len(o.Flags.NodeLabels) != 3 {
		t.Errorf("nodeLabels = %v", o.Flags.NodeLabels)
	}
	if c.Logging.Verbosity != 3 || len(c.Logging.VModule) != 1 || c.Logging.FlushFrequency.Duration.Duration != 3*time.Second {
		t.Errorf("logging = %+v (underscores normalise to dashes)", c.Logging)
	}
}

func TestBadFlagSyntaxNamesTheOption(t *testing.T) {
	tests := []struct{ arg, want string }{
		{"--max-pods=many", `"--max-pods"`},
		{"--sync-frequency=soon", `"--sync-frequency"`},
		{"--fail-swap-on=perhaps", `"--fail-swap-on"`},
		{"--register-with-taints=novalue", `"--register-with-taints"`},
		{"--reserved-memory=x:memory=1Gi", `"--reserved-memory"`},
		{"--reserved-memory=0:memory=lots", `"--reserved-memory"`},
		{"--feature-gates=NoSuchGate=true", `unrecognized feature gate "NoSuchGate"`},
		{"--feature-gates=QOSReserved=maybe", `invalid value "maybe" for feature gate "QOSReserved"`},
		{"--log-text-info-buffer-size=lots", `"--log-text-info-buffer-size"`},
		{"--no-such-option", "unknown flag: --no-such-option"},
		{"stray", `unexpected argument "stray"`},
	}
	for _, tt := range tests {
		_, err := Parse([]string{tt.arg}, build)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.arg, err, tt.want)
		}
	}
}

func TestZeroMeans(t *testing.T) {
	o := mustParse(t, "--event-qps=0", "--event-burst=0", "--kube-api-qps=0", "--kube-api-burst=0", "--registry-qps=0")
	c := o.Config
	if c.EventRecordQPS != 5 || c.EventBurst != 10 || c.KubeAPIQPS != 50 || c.KubeAPIBurst != 100 {
		t.Errorf("0 means: eventQPS %d eventBurst %d apiQPS %d apiBurst %d; want 5 10 50 100", c.EventRecordQPS, c.EventBurst, c.KubeAPIQPS, c.KubeAPIBurst)
	}
	if c.RegistryPullQPS != 0 {
		t.Errorf("registry-qps 0 (unlimited) became %d", c.RegistryPullQPS)
	}
	o = mustParse(t, "--event-qps=7", "--event-burst=9")
	if o.Config.EventRecordQPS != 7 || o.Config.EventBurst != 9 {
		t.Errorf("non-zero values changed: %d %d", o.Config.EventRecordQPS, o.Config.EventBurst)
	}
}

func TestDeprecationWarnsOncePerOption(t *testing.T) {
	o := mustParse(t, "--max-pods=1", "--max-pods=2", "--maximum-dead-containers=3", "--root-dir=/tmp/x", "-v=1")
	want := []string{
		"Flag --max-pods has been deprecated, " + deprecatedForConfig,
		"Flag --maximum-dead-containers has been deprecated, " + deprecatedDeadGC,
	}
	if strings.Join(o.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings = %q, want %q", o.Warnings, want)
	}
	if o := mustParse(t); len(o.Warnings) != 0 {
		t.Errorf("no options, warnings %q", o.Warnings)
	}
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const fileHead = "apiVersion: orchlet.config.orch.io/v1beta1\nkind: OrchletConfiguration\n"

func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body, want string
	}{
		{"unknown field", fileHead + "maxPodz: 3\n", `unknown field "maxPodz"`},
		{"wrong kind", "apiVersion: orchlet.config.orch.io/v1beta1\nkind: KubeletConfiguration\n", `kind: must be "OrchletConfiguration"`},
		{"bad value", fileHead + "cgroupDriver: docker\n", `--cgroup-driver (cgroupDriver): unsupported value "docker"`},
		{"unknown gate", fileHead + "featureGates:\n  Nope: true\n", `featureGates): unrecognized feature gate "Nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(dir, tt.name+".yaml"), tt.body)
			_, err := Parse([]string{"--config=" + path}, build)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(tt.want, "unknown field") && !strings.Contains(err.Error(), "--config "+path) {
				t.Errorf("err %v does not name the file", err)
			}
		})
	}
	_, err := Parse([]string{"--config=" + filepath.Join(dir, "missing.yaml")}, build)
	if err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing file: err = %v", err)
	}
	_, err = Parse([]string{"--config-dir=" + filepath.Join(dir, "missing")}, build)
	if err == nil || !strings.Contains(err.Error(), "--config-dir") {
		t.Errorf("missing dir: err = %v", err)
	}
	bad := writeFile(t, filepath.Join(dir, "d", "10-bad.conf"), fileHead+"nope: 1\n")
	_, err = Parse([]string{"--config-dir=" + filepath.Dir(bad)}, build)
	if err == nil || !strings.Contains(err.Error(), "drop-in "+bad) {
		t.Errorf("bad drop-in: err = %v", err)
	}
}

func TestRelativeConfigPathAndPathsInsideIt(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "etc", "orchlet.yaml"), fileHead+"staticPodPath: manifests\ntlsCertFile: /abs/cert.pem\nmaxPods: 7\n")
	t.Chdir(dir)
	o := mustParse(t, "--config", "etc/orchlet.yaml")
	if o.Config.MaxPods != 7 {
		t.Errorf("relative --config not read: maxPods %d", o.Config.MaxPods)
	}
	if want := filepath.Join("etc", "manifests"); o.Config.StaticPodPath != want {
		t.Errorf("staticPodPath = %q, want %q (relative to the file)", o.Config.StaticPodPath, want)
	}
	if o.Config.TLSCertFile != "/abs/cert.pem" {
		t.Errorf("absolute path changed: %q", o.Config.TLSCertFile)
	}
}

func TestDropInsApplyInLexicalOrderAndOnlyConfFiles(t *testing.T) {
	d := filepath.Join(t.TempDir(), "orchlet.conf.d")
	writeFile(t, filepath.Join(d, "20-b.conf"), fileHead+"maxPods: 20\n")
	writeFile(t, filepath.Join(d, "10-a.conf"), fileHead+"maxPods: 10\nport: 1010\n")
	writeFile(t, filepath.Join(d, "30-c.yaml"), fileHead+"maxPods: 30\n")
	writeFile(t, filepath.Join(d, "sub.conf", "99.conf"), fileHead+"maxPods: 99\n")
	o := mustParse(t, "--config-dir", d)
	if o.Config.MaxPods != 20 || o.Config.Port != 1010 {
		t.Errorf("maxPods %d port %d; want 20 (last .conf wins) and 1010", o.Config.MaxPods, o.Config.Port)
	}
}

// TestPrecedence checks, field by field, default < --config file < --config-dir drop-ins < command line.
func TestPrecedence(t *testing.T) {
	type layer struct{ file, dropIn, flag string }
	tests := []struct {
		field string
		layer layer
		get   func(*Options) string
		want  [4]string // default; with file; with file+drop-in; with all three
	}{
		{"maxPods", layer{"maxPods: 1", "maxPods: 2", "--max-pods=3"},
			func(o *Options) string { return itoa(int64(o.Config.MaxPods)) }, [4]string{"110", "1", "2", "3"}},
		{"eventRecordQPS", layer{"eventRecordQPS: 7", "eventRecordQPS: 8", "--event-qps=9"},
			func(o *Options) string { return itoa(int64(o.Config.EventRecordQPS)) }, [4]string{"50", "7", "8", "9"}},
		{"syncFrequency", layer{"syncFrequency: 30s", "syncFrequency: 40s", "--sync-frequency=50s"},
			func(o *Options) string { return o.Config.SyncFrequency.Duration.String() }, [4]string{"1m0s", "30s", "40s", "50s"}},
		{"failSwapOn", layer{"failSwapOn: false", "failSwapOn: true", "--fail-swap-on=false"},
			func(o *Options) string { return tf(o.Config.FailSwapOn) }, [4]string{"true", "false", "true", "false"}},
		{"authentication.anonymous.enabled", layer{"authentication:\n  anonymous:\n    enabled: false", "authentication:\n  anonymous:\n    enabled: true", "--anonymous-auth=false"},
			func(o *Options) string { return tf(o.Config.Authentication.Anonymous.Enabled) }, [4]string{"true", "false", "true", "false"}},
		{"authorization.mode", layer{"authorization:\n  mode: Webhook", "authorization:\n  mode: AlwaysAllow", "--authorization-mode=Webhook"},
			func(o *Options) string { return o.Config.Authorization.Mode }, [4]string{"AlwaysAllow", "Webhook", "AlwaysAllow", "Webhook"}},
		{"cgroupDriver", layer{"cgroupDriver: systemd", "cgroupDriver: cgroupfs", "--cgroup-driver=systemd"},
			func(o *Options) string { return o.Config.CgroupDriver }, [4]string{"cgroupfs", "systemd", "cgroupfs", "systemd"}},
		{"clusterDNS", layer{"clusterDNS: [10.0.0.1, 10.0.0.2]", "clusterDNS: [10.0.0.3]", "--cluster-dns=10.0.0.4"},
			func(o *Options) string { return strings.Join(o.Config.ClusterDNS, ",") }, [4]string{"", "10.0.0.1,10.0.0.2", "10.0.0.3", "10.0.0.4"}},
		{"enforceNodeAllocatable", layer{"enforceNodeAllocatable: [none]", "enforceNodeAllocatable: [pods]", "--enforce-node-allocatable=none"},
			func(o *Options) string { return strings.Join(o.Config.EnforceNodeAllocatable, ",") }, [4]string{"pods", "none", "pods", "none"}},
		{"evictionHard (a map: the flag replaces it)", layer{"evictionHard:\n  memory.available: 1Gi\n  nodefs.available: 10%", "evictionHard:\n  imagefs.available: 15%", "--eviction-hard=memory.available<2Gi"},
			func(o *Options) string { return kv(o.Config.EvictionHard) }, [4]string{"", "memory.available=1Gi,nodefs.available=10%", "imagefs.available=15%,memory.available=1Gi,nodefs.available=10%", "memory.available=2Gi"}},
		{"featureGates (merge gate by gate)", layer{"featureGates:\n  QOSReserved: true\n  ImageVolume: true", "featureGates:\n  ImageVolume: false\n  EventedPLEG: true", "--feature-gates=EventedPLEG=false,AllBeta=true"},
			func(o *Options) string { return kvb(o.Config.FeatureGates) }, [4]string{"", "ImageVolume=true,QOSReserved=true", "EventedPLEG=true,ImageVolume=false,QOSReserved=true", "AllBeta=true,EventedPLEG=false,ImageVolume=false,QOSReserved=true"}},
		{"logging.verbosity", layer{"logging:\n  verbosity: 2", "logging:\n  verbosity: 4", "-v=6"},
			func(o *Options) string { return itoa(int64(o.Config.Logging.Verbosity)) }, [4]string{"0", "2", "4", "6"}},
		{"registerWithTaints", layer{"registerWithTaints:\n- key: a\n  effect: NoSchedule", "registerWithTaints:\n- key: b\n  effect: NoExecute", "--register-with-taints=c=d:PreferNoSchedule"},
			func(o *Options) string { return taintsValue(&o.Config.RegisterWithTaints).String() }, [4]string{"", "a:NoSchedule", "b:NoExecute", "c=d:PreferNoSchedule"}},
		{"staticPodURLHeader", layer{"staticPodURLHeader:\n  A: [\"x\"]", "staticPodURLHeader:\n  B: [\"y\"]", "--manifest-url-header=C:z"},
			func(o *Options) string { return kvs(o.Config.StaticPodURLHeader) }, [4]string{"", "A=x", "A=x,B=y", "C=z"}},
		{"containerLogMaxSize", layer{"containerLogMaxSize: 20Mi", "containerLogMaxSize: 30Mi", "--container-log-max-size=40Mi"},
			func(o *Options) string { return o.Config.ContainerLogMaxSize }, [4]string{"10Mi", "20Mi", "30Mi", "40Mi"}},
		{"podPidsLimit", layer{"podPidsLimit: 100", "podPidsLimit: 200", "--pod-max-pids=300"},
			func(o *Options) string { return itoa(o.Config.PodPidsLimit) }, [4]string{"-1", "100", "200", "300"}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			dir := t.TempDir()
			file := writeFile(t, filepath.Join(dir, "orchlet.yaml"), fileHead+tt.layer.file+"\n")
			dropIns := filepath.Join(dir, "conf.d")
			writeFile(t, filepath.Join(dropIns, "50-test.conf"), fileHead+tt.layer.dropIn+"\n")
			steps := [][]string{
				nil,
				{"--config=" + file},
				{"--config=" + file, "--config-dir=" + dropIns},
				{tt.layer.flag, "--config=" + file, "--config-dir=" + dropIns},
			}
			for i, args := range steps {
				if got := tt.get(mustParse(t, args...)); got != tt.want[i] {
					t.Errorf("layer %d (%q): %s = %q, want %q", i, args, tt.field, got, tt.want[i])
				}
			}
		})
	}
}

func TestFileGatesEnableGatedOptions(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "c.yaml"), fileHead+"featureGates:\n  AllAlpha: true\n")
	o := mustParse(t, "--config", file, "--qos-reserved=memory=50%", "--log-text-split-stream")
	if !o.Gates.Enabled("QOSReserved") || !o.Config.Logging.Options.Text.SplitStream {
		t.Error("AllAlpha from the file did not enable the gated options")
	}
	if _, err := Parse([]string{"--config", file, "--feature-gates=QOSReserved=false", "--qos-reserved=memory=50%"}, build); err == nil {
		t.Error("an explicit QOSReserved=false on the command line did not beat AllAlpha from the file")
	}
}

func TestCPUManagerReconcilePeriodFollowsNodeStatusUnlessSupplied(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "c.yaml"), fileHead+"cpuManagerReconcilePeriod: 10s\nnodeStatusUpdateFrequency: 30s\n")
	tests := []struct {
		args []string
		want time.Duration
	}{
		{nil, 10 * time.Second},
		{[]string{"--node-status-update-frequency=20s"}, 20 * time.Second},
		{[]string{"--node-status-update-frequency=20s", "--cpu-manager-reconcile-period=5s"}, 5 * time.Second},
		{[]string{"--config", file}, 10 * time.Second},
	}
	for _, tt := range tests {
		if got := mustParse(t, tt.args...).Config.CPUManagerReconcilePeriod.Duration; got != tt.want {
			t.Errorf("%q: cpuManagerReconcilePeriod = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestUnknownGateInFileReportedWithOtherMistakes(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "c.yaml"), fileHead+"featureGates:\n  Nope: true\n  QOSReserved: true\nqosReserved:\n  memory: 50%\noomScoreAdj: 5000\n")
	_, err := Parse([]string{"--config", file}, build)
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, `unrecognized feature gate "Nope"`) || !strings.Contains(msg, "--oom-score-adj") {
		t.Errorf("err = %v, want the unknown gate and the oom-score-adj refusal", err)
	}
	if strings.Contains(msg, "needs feature gate QOSReserved") {
		t.Errorf("the known gate QOSReserved=true was dropped with the unknown one: %v", err)
	}
}
