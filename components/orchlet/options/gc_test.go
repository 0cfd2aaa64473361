package options

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGCSettings(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string // "" accepted
	}{
		{"maximum age", "imageMaximumGCAge: 1h", nil, ""},
		{"maximum age without its gate", "imageMaximumGCAge: 1h", []string{"--feature-gates=ImageMaximumGCAge=false"}, "imageMaximumGCAge: needs feature gate ImageMaximumGCAge"},
		{"negative maximum age", "imageMaximumGCAge: -1h", nil, "imageMaximumGCAge: -1h0m0s must not be negative"},
		{"maximum age not above the minimum", "imageMaximumGCAge: 2m", nil, "imageMaximumGCAge: 2m0s must be greater than --minimum-image-ttl-duration (imageMinimumGCAge) 2m0s"},
		{"maximum age above a smaller minimum", "imageMaximumGCAge: 2m", []string{"--minimum-image-ttl-duration=1m"}, ""},
		{"negative minimum image age", "", []string{"--minimum-image-ttl-duration=-1s"}, "--minimum-image-ttl-duration (imageMinimumGCAge): must not be negative, got -1s"},
		{"negative minimum container age", "", []string{"--minimum-container-ttl-duration=-1s"}, "--minimum-container-ttl-duration: invalid minimum garbage collection age: -1s"},
		{"negative dead-container caps mean none", "", []string{"--maximum-dead-containers=-5", "--maximum-dead-containers-per-container=-1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(fileHead+tc.file+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			o, err := Parse(append([]string{"--config=" + path}, tc.args...), build)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if err := o.RefuseAPIServerModeSettings(); err != nil {
					t.Fatalf("accepted, then refused as an API-server-mode setting: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	o := mustParse(t)
	if o.Config.ImageMaximumGCAge.Duration != 0 {
		t.Fatal("imageMaximumGCAge defaults to 0 (disabled)")
	}
	if o.Flags.MinimumContainerTTLDuration != 0 || o.Flags.MaximumDeadContainers != -1 || o.Flags.MaximumDeadContainersPerContainer != 1 {
		t.Fatalf("dead-container defaults %+v", o.Flags)
	}
}
