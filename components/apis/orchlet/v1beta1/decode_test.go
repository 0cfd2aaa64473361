package v1beta1

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

const head = "apiVersion: orchlet.config.orch.io/v1beta1\nkind: OrchletConfiguration\n"

func TestDecodeIntoKeepsDefaultsAndTakesSetFields(t *testing.T) {
	cfg := NewDefault()
	doc := head + "eventRecordQPS: 0\nsyncFrequency: 30s\nfeatureGates:\n  QOSReserved: true\nauthentication:\n  anonymous:\n    enabled: false\n"
	if err := DecodeInto([]byte(doc), cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.EventRecordQPS != 0 {
		t.Errorf("eventRecordQPS = %d, want the file's explicit 0", cfg.EventRecordQPS)
	}
	if cfg.SyncFrequency.Duration != 30*time.Second {
		t.Errorf("syncFrequency = %v", cfg.SyncFrequency)
	}
	if cfg.Authentication.Anonymous.Enabled {
		t.Error("anonymous still enabled")
	}
	if cfg.Authentication.Webhook.CacheTTL.Duration != 2*time.Minute {
		t.Errorf("sibling default lost: cacheTTL = %v", cfg.Authentication.Webhook.CacheTTL)
	}
	if cfg.MaxPods != 110 || cfg.EventBurst != 100 {
		t.Errorf("defaults lost: maxPods %d eventBurst %d", cfg.MaxPods, cfg.EventBurst)
	}
}

func TestDecodeIntoRefuses(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field", head + "noSuchField: 1\n", `unknown field "noSuchField"`},
		{"wrong case", head + "EventRecordQPS: 1\n", `unknown field "EventRecordQPS"`},
		{"duplicate", head + "maxPods: 1\nmaxPods: 2\n", `maxPods`},
		{"wrong kind", "apiVersion: orchlet.config.orch.io/v1beta1\nkind: Other\n", `kind: must be "OrchletConfiguration"`},
		{"missing apiVersion", "kind: OrchletConfiguration\n", `apiVersion: must be "orchlet.config.orch.io/v1beta1"`},
		{"wrong type", head + "maxPods: lots\n", `maxPods`},
		{"not yaml", "a: [", `yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DecodeInto([]byte(tt.doc), NewDefault())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDefaultsFollowSpec(t *testing.T) {
	c := NewDefault()
	checks := map[string][2]any{
		"address":              {c.Address, "0.0.0.0"},
		"port":                 {c.Port, int32(10250)},
		"readOnlyPort":         {c.ReadOnlyPort, int32(10255)},
		"healthzPort":          {c.HealthzPort, int32(10248)},
		"authorization.mode":   {c.Authorization.Mode, "AlwaysAllow"},
		"oomScoreAdj":          {c.OOMScoreAdj, int32(-999)},
		"podPidsLimit":         {c.PodPidsLimit, int64(-1)},
		"maxOpenFiles":         {c.MaxOpenFiles, int64(1000000)},
		"nodeStatusMaxImages":  {c.NodeStatusMaxImages, int32(50)},
		"containerLogMaxSize":  {c.ContainerLogMaxSize, "10Mi"},
		"memoryManagerPolicy":  {c.MemoryManagerPolicy, "None"},
		"streamingIdle":        {c.StreamingConnectionIdleTimeout.Duration, 4 * time.Hour},
		"evictionPressureTP":   {c.EvictionPressureTransitionPeriod.Duration, 5 * time.Minute},
		"logging.format":       {c.Logging.Format, "text"},
		"logging.flushFreq":    {c.Logging.FlushFrequency.Duration.Duration, 5 * time.Second},
		"registryPullQPS":      {c.RegistryPullQPS, int32(5)},
		"imageGCHighThreshold": {c.ImageGCHighThresholdPercent, int32(85)},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
}

// TestPrintedConfigurationDecodesBack proves the effective configuration the agent prints is itself a
// valid configuration file meaning the same thing.
func TestPrintedConfigurationDecodesBack(t *testing.T) {
	c := NewDefault()
	c.MaxPods = 7
	c.FeatureGates = map[string]bool{"QOSReserved": true}
	c.EvictionHard = map[string]string{"memory.available": "1Gi"}
	c.ReservedMemory = []MemoryReservation{{NumaNode: 1, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	c.RegisterWithTaints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}
	first, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back := NewDefault()
	if err := DecodeInto(first, back); err != nil {
		t.Fatalf("printed configuration does not decode: %v\n%s", err, first)
	}
	second, err := yaml.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(second) {
		t.Errorf("round trip changed the configuration:\n%s\n---\n%s", first, second)
	}
}
