package options

import (
	"reflect"
	"strings"
	"testing"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// nonDefault gives each API-server-mode option a valid value other than its default (with the
// companions validation needs), so each can be shown refused in a standalone run.
var nonDefault = map[string][]string{
	"register-node":                {"--register-node=false"},
	"register-with-taints":         {"--register-with-taints=a=b:NoSchedule"},
	"node-status-update-frequency": {"--node-status-update-frequency=20s"},
	"node-status-max-images":       {"--node-status-max-images=5"},
	"kube-api-qps":                 {"--kube-api-qps=10"},
	"kube-api-burst":               {"--kube-api-burst=10"},
	"kube-api-content-type":        {"--kube-api-content-type=application/json"},
	"rotate-certificates":          {"--rotate-certificates"},
	"rotate-server-certificates":   {"--rotate-server-certificates", "--feature-gates=RotateOrchletServerCertificate=true"},
	"bootstrap-kubeconfig":         {"--bootstrap-kubeconfig=/etc/orch/bootstrap.conf"},
	"node-ip":                      {"--node-ip=10.0.0.5"},
	"node-labels":                  {"--node-labels=example.com/team=a"},
	"provider-id":                  {"--provider-id=machine-1"},
	"cloud-provider":               {"--cloud-provider=external"},
}

// The defaults, and the settings a standalone agent acts on, are not refused.
func TestStandaloneSettingsAreNotRefused(t *testing.T) {
	if err := mustParse(t).RefuseAPIServerModeSettings(); err != nil {
		t.Fatalf("the defaults are refused: %v", err)
	}
	// Settings the agent acts on are not refused: the pod workers send the cgroup parent, CFS
	// quota and seccomp default to the runtime and set the pids limit on the pod cgroup.
	for _, args := range [][]string{
		{"--event-qps=7", "--max-pods=20", "--serialize-image-pulls=false"},
		// The HTTPS server turns block profiling on (components/orchlet/server).
		{"--contention-profiling"},
		// Registration annotates the Node, or not (components/orchlet/nodestatus).
		{"--enable-controller-attach-detach=false"},
		// The garbage collectors (imagegc, containergc) act on these.
		{"--image-gc-high-threshold=90", "--image-gc-low-threshold=70", "--minimum-image-ttl-duration=5m",
			"--maximum-dead-containers=10", "--maximum-dead-containers-per-container=2", "--minimum-container-ttl-duration=1m",
			"--pod-infra-container-image=pause:3.10"},
		{"--cgroup-driver=systemd", "--cgroup-root=/", "--cpu-cfs-quota=false", "--pod-max-pids=100", "--seccomp-default", "--root-dir=/srv/orchlet"},
		{"--cgroups-per-qos=false", "--enforce-node-allocatable=", "--cpu-cfs-quota-period=50ms", "--feature-gates=CustomCPUCFSQuotaPeriod=true"},
	} {
		if err := mustParse(t, args...).RefuseAPIServerModeSettings(); err != nil {
			t.Fatalf("standalone settings %q refused: %v", args, err)
		}
	}
	// The eviction manager acts on its settings in both modes.
	eviction := []string{"--eviction-hard=memory.available<1Gi", "--eviction-soft=memory.available<2Gi", "--eviction-soft-grace-period=memory.available=1m",
		"--eviction-minimum-reclaim=memory.available=100Mi", "--eviction-pressure-transition-period=1m", "--eviction-max-pod-grace-period=30",
		"--local-storage-capacity-isolation=false"}
	if err := mustParse(t, eviction...).RefuseAPIServerModeSettings(); err != nil {
		t.Fatalf("eviction settings refused: %v", err)
	}
}

// The volume stats calculator measures the pods' volumes every period, none when it is 0 or
// negative: every value is acted on.
func TestVolumeStatsAggPeriodAccepted(t *testing.T) {
	for _, v := range []string{"2m", "0", "-1s"} {
		if err := mustParse(t, "--volume-stats-agg-period="+v).RefuseAPIServerModeSettings(); err != nil {
			t.Errorf("--volume-stats-agg-period=%s refused: %v", v, err)
		}
	}
}

// The eviction manager arms memory thresholds with the kernel where the host has cgroup v1's
// memory controller, and polls with a log line saying so elsewhere: the option is acted on.
func TestKernelMemcgNotificationAccepted(t *testing.T) {
	if err := mustParse(t, "--kernel-memcg-notification").RefuseAPIServerModeSettings(); err != nil {
		t.Fatalf("--kernel-memcg-notification refused: %v", err)
	}
}

func TestEveryAPIServerModeSettingIsRefusedStandalone(t *testing.T) {
	for _, u := range apiServerModeSettings {
		t.Run(u.option, func(t *testing.T) {
			args, ok := nonDefault[u.option]
			if !ok {
				t.Fatalf("no non-default value for --%s in the test table", u.option)
			}
			err := mustParse(t, args...).RefuseAPIServerModeSettings()
			want := "--" + u.option
			if u.field != "" {
				want += " (" + u.field + ")"
			}
			message := ": it acts only in API-server mode; set --orchconfig"
			// With --orchconfig the agent acts on it.
			if err := mustParse(t, append(args, "--orchconfig=/etc/orch/orchlet.conf")...).RefuseAPIServerModeSettings(); err != nil && strings.Contains(err.Error(), want) {
				t.Fatalf("%q with --orchconfig: %v", args, err)
			}
			if err == nil || !strings.Contains(err.Error(), want+message) {
				t.Fatalf("%q: err = %v, want one naming %s", args, err, want)
			}
		})
	}
}

// Settings that work now run: the static CPU manager with its reserved CPUs and reconcile period,
// the Static memory manager with its reserved memory, and container log rotation.
func TestResourceManagerSettingsRun(t *testing.T) {
	args := []string{"--cpu-manager-policy=static", "--reserved-cpus=0-1", "--cpu-manager-reconcile-period=30s",
		"--memory-manager-policy=Static", "--reserved-memory=0:memory=100Mi", "--eviction-hard=memory.available<100Mi",
		"--container-log-max-size=20Mi", "--container-log-max-files=3", "--container-log-max-workers=2", "--container-log-monitor-interval=30s"}
	if err := mustParse(t, args...).RefuseAPIServerModeSettings(); err != nil {
		t.Fatalf("%q refused: %v", args, err)
	}
}

// Every entry names a real file field or command-line field, so none can silently never match.
func TestAPIServerModeSettingsNameRealFields(t *testing.T) {
	fields := map[string]bool{}
	config := reflect.TypeOf(v1beta1.OrchletConfiguration{})
	for i := range config.NumField() {
		name, _, _ := strings.Cut(config.Field(i).Tag.Get("json"), ",")
		fields[name] = true
	}
	flags := reflect.TypeOf(Flags{})
	for _, u := range apiServerModeSettings {
		if u.field != "" {
			if !fields[u.field] {
				t.Errorf("--%s: no configuration field %q", u.option, u.field)
			}
			continue
		}
		if _, ok := flags.FieldByName(u.flag); !ok {
			t.Errorf("--%s: no Flags field %q", u.option, u.flag)
		}
	}
}

// The container manager acts on the process settings, the system containers and node
// allocatable (components/orchlet/cm), and admission on the allocatable the reservations leave,
// in both modes.
func TestContainerManagerSettings(t *testing.T) {
	for _, args := range [][]string{
		{"--oom-score-adj=-500", "--max-open-files=4096", "--kubelet-cgroups=/orchlet", "--system-cgroups=/system"},
		{"--kube-reserved=cpu=1,memory=1Gi,pid=100", "--system-reserved=ephemeral-storage=1Gi", "--experimental-allocatable-ignore-eviction"},
		{"--cgroups-per-qos=false", "--enforce-node-allocatable=system-reserved-compressible", "--system-reserved-cgroup=/system.slice", "--system-reserved=cpu=1"},
		{"--cgroups-per-qos=false", "--enforce-node-allocatable=", "--kube-reserved=memory=1Gi"},
		{"--orchconfig=/etc/orch/orchlet.conf", "--enforce-node-allocatable=", "--cgroups-per-qos=false", "--kube-reserved=memory=1Gi"},
	} {
		if err := mustParse(t, args...).RefuseAPIServerModeSettings(); err != nil {
			t.Errorf("%q refused: %v", args, err)
		}
	}
}
