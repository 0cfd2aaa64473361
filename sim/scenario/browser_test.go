//go:build browser

package scenario

import (
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A real browser draws the pods' chart as the page says: headless Chromium (Debian's package)
// renders the memory leak's pod lanes to PNG, and the pixel where the page puts leaker's eviction
// at 6m is the marker's red, while the lane before it is the green of a ready pod.
func TestBrowserRendersEvictionMark(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium on PATH (apt-get install chromium): ", err)
	}
	s, _, page := reportPage(t, "eviction-memory-leak-hard.yaml")
	i := strings.Index(page, `<svg xmlns="http://www.w3.org/2000/svg" class="pods"`)
	j := strings.Index(page[i:], "</svg>")
	if i < 0 || j < 0 {
		t.Fatal("no pods chart in the page")
	}
	dir := t.TempDir()
	html := filepath.Join(dir, "pods.html")
	doc := `<!DOCTYPE html><html><body style="margin:0">` + page[i:i+j+len("</svg>")] + `</body></html>`
	if err := os.WriteFile(html, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "pods.png")
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--window-size=1000,200", "--screenshot="+shot, "file://"+html)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Lanes in pod order: late-best-effort, late-burstable, leaker (the third), web.
	y := topPad + 2*(laneHeight+4) + laneHeight/2
	rgb := func(x int) [3]uint32 {
		r, g, b, _ := img.At(x, y).RGBA()
		return [3]uint32{r >> 8, g >> 8, b >> 8}
	}
	near := func(got, want [3]uint32) bool {
		for k := range got {
			if d := int(got[k]) - int(want[k]); d < -40 || d > 40 {
				return false
			}
		}
		return true
	}
	mark := int(xAt(s.Duration.D()*3/4, s.Duration.D()))
	if got := rgb(mark); !near(got, [3]uint32{0xb7, 0x1c, 0x1c}) {
		t.Errorf("pixel (%d,%d) at leaker's eviction is %v, want the marker's #b71c1c", mark, y, got)
	}
	if got := rgb(mark - 100); !near(got, [3]uint32{0x66, 0xbb, 0x6a}) {
		t.Errorf("pixel (%d,%d) before the eviction is %v, want a ready pod's #66bb6a", mark-100, y, got)
	}
}
