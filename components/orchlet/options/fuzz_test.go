package options

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// maxParseTime flags an input that makes loading crawl: configuration files are tiny, so seconds
// mean a hang in the making, not a slow machine.
const maxParseTime = 5 * time.Second

// FuzzConfigFiles feeds arbitrary bytes to the agent's configuration loading as the --config file
// and as one --config-dir drop-in over it: loading never panics or hangs, and ends either in options
// that validate again and can be checked for settings not acted on, or in an error naming where.
func FuzzConfigFiles(f *testing.F) {
	for _, seed := range [][2]string{
		{fileHead + "maxPods: 7\nstaticPodPath: manifests\n", fileHead + "port: 1010\n"},
		{fileHead + "cgroupDriver: docker\n", ""},
		{fileHead + "featureGates:\n  Nope: true\n", fileHead + "maxPodz: 3\n"},
		{fileHead + "evictionHard:\n  memory.available: 10%\nsystemReserved:\n  cpu: 500m\nkubeReserved:\n  memory: 1Gi\n", ""},
		{fileHead + "reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 1Gi\nmemoryManagerPolicy: Static\n", ""},
		{fileHead + "registerWithTaints:\n- key: a\n  effect: NoSchedule\nnodeLabels:\n  a/b: c\n", ""},
		{fileHead + "syncFrequency: 1m\nfileCheckFrequency: -1s\nimageGCHighThresholdPercent: 101\n", ""},
		{`{"apiVersion":"orchlet.config.orch.io/v1beta1","kind":"OrchletConfiguration","maxPods":1}`, ""},
		{"apiVersion: v1\nkind: Pod\n", "- a\n- b\n"},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, file, dropIn []byte) {
		dir := t.TempDir()
		config := filepath.Join(dir, "orchlet.yaml")
		drops := filepath.Join(dir, "orchlet.conf.d")
		if err := os.WriteFile(config, file, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(drops, 0o755); err != nil {
			t.Fatal(err)
		}
		if len(dropIn) > 0 {
			if err := os.WriteFile(filepath.Join(drops, "10-fuzz.conf"), dropIn, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A hung load never returns to be judged, so a watchdog crashes the worker instead, which
		// makes the fuzzer save the input.
		watchdog := time.AfterFunc(maxParseTime, func() {
			panic(fmt.Sprintf("loading still running after %v on %q and %q", maxParseTime, file, dropIn))
		})
		defer watchdog.Stop()
		o, err := Parse([]string{"--config", config, "--config-dir", drops}, build)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if o == nil || o.Config == nil || o.Action != ActionRun {
			t.Fatalf("no error and no options to run with: %+v", o)
		}
		if err := Validate(o); err != nil {
			t.Fatalf("options accepted by Parse fail validation again: %v", err)
		}
		_ = o.RefuseAPIServerModeSettings() // a refusal is an answer; only a panic or a hang is a find
	})
}
