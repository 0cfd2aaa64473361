package flexvolume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// callTimeout bounds one driver call.
const callTimeout = 2 * time.Minute

// The statuses a driver answers with.
const (
	StatusSuccess      = "Success"
	StatusFailure      = "Failure"
	StatusNotSupported = "Not supported"
)

// result is a driver's answer (the kubelet's DriverStatus).
type result struct {
	Status       string        `json:"status"`
	Message      string        `json:"message,omitempty"`
	Capabilities *capabilities `json:"capabilities,omitempty"`
}

type capabilities struct {
	Attach *bool `json:"attach,omitempty"`
}

// Plugins are the drivers under Dir (--volume-plugin-dir), looked up when a volume names one, so
// that a driver installed while the agent runs is found, as the kubelet's prober finds it.
type Plugins struct {
	Dir string

	mu     sync.Mutex
	inited map[string]error // by executable: the init's verdict
}

// New is the drivers of dir.
func New(dir string) *Plugins { return &Plugins{Dir: dir, inited: map[string]error{}} }

// PluginDir is the volume directory name of a driver, the kubelet's escaped plugin name:
// "example.com/lvm" is "example.com~lvm".
func PluginDir(driver string) string { return strings.ReplaceAll(driver, "/", "~") }

// executable is <Dir>/<vendor>~<driver>/<driver>.
func (p *Plugins) executable(driver string) string {
	return filepath.Join(p.Dir, PluginDir(driver), filepath.Base(driver))
}

// Mount sets the volume up on dir: the driver initialized once, then asked to mount with options
// (the kubelet's JSON of the volume's options and its implicit kubernetes.io/ ones).
func (p *Plugins) Mount(ctx context.Context, driver, dir string, options map[string]string) error {
	bin, err := p.ready(ctx, driver)
	if err != nil {
		return err
	}
	opts, err := json.Marshal(options)
	if err != nil {
		return err
	}
	_, err = call(ctx, bin, "mount", dir, string(opts))
	return err
}

// Unmount tears the volume down from dir.
func (p *Plugins) Unmount(ctx context.Context, driver, dir string) error {
	bin, err := p.ready(ctx, driver)
	if err != nil {
		return err
	}
	_, err = call(ctx, bin, "unmount", dir)
	return err
}

// ready finds the driver and initializes it once; a driver that needs attaching is refused.
func (p *Plugins) ready(ctx context.Context, driver string) (string, error) {
	bin := p.executable(driver)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no volume plugin matched: flexVolume driver %q not found at %s", driver, bin)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err, done := p.inited[bin]; done {
		return bin, err
	}
	r, err := call(ctx, bin, "init")
	if err == nil && (r.Capabilities == nil || r.Capabilities.Attach == nil || *r.Capabilities.Attach) {
		// The kubelet takes a driver that does not say otherwise to need attaching.
		err = fmt.Errorf("flexVolume driver %q needs attaching (capabilities.attach is not false), which this orchlet does not do", driver)
	}
	p.inited[bin] = err
	return bin, err
}

// call runs the driver and reads its status: Failure and Not supported are errors with the
// driver's message.
func call(ctx context.Context, bin string, args ...string) (*result, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	var r result
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		if err == nil {
			err = jerr
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("driver call %s %s failed: output %q: %w", filepath.Base(bin), args[0], strings.TrimSpace(string(out)), err)
	}
	switch r.Status {
	case StatusSuccess:
		return &r, nil
	case StatusNotSupported:
		return nil, fmt.Errorf("driver call %s %s: %s: %s", filepath.Base(bin), args[0], StatusNotSupported, r.Message)
	default:
		return nil, fmt.Errorf("driver call %s %s failed: %s", filepath.Base(bin), args[0], r.Message)
	}
}
