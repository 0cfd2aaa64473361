package sources

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// TestOSFileSource: production reads --pod-manifest-path from the machine, absolute or relative.
func TestOSFileSource(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(podYAML("web", "nginx")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".web.yaml.swp"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(dir))
	for _, p := range []string{dir, filepath.Base(dir)} {
		c := v1beta1.NewDefault()
		c.StaticPodPath = p
		polls, err := FromConfig(c, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := &problems{}
		s := mustNew(t, newMock(), r, polls...)
		s.Step(context.Background())
		us := s.Drain()
		if got := lines(us); got != "ADD file default/web-node-a\n" || len(r.got) != 0 {
			t.Fatalf("path %q: updates %q, problems %v", p, got, r.got)
		}
		if got := polls[0].Source.(*FileSource).Path; got != filepath.ToSlash(dir) {
			t.Errorf("path %q read as %q, want the absolute %q", p, got, dir)
		}
		if polls[0].Every != 20*time.Second {
			t.Errorf("period %v, want 20s", polls[0].Every)
		}
	}
}
