package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"orch.io/orch/sim/scenario"
)

// atCache is where orchsim built at other commits is kept, one directory a commit, built once.
func atCache() string {
	if d := os.Getenv("ORCHSIM_AT_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "orch-orchsim-at")
}

// buildAt is orchsim built from commit (anything git rev-parse reads) of the repository in the
// working directory: the commit's tree (git archive) built with go into atCache, once.
func buildAt(commit string, progress io.Writer) (string, string, error) {
	out, err := exec.Command("git", "rev-parse", "--verify", commit+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("--at %s: not a commit of the repository here: %w", commit, err)
	}
	hash := strings.TrimSpace(string(out))
	dir := filepath.Join(atCache(), hash)
	bin := filepath.Join(dir, "orchsim")
	if _, err := os.Stat(bin); err == nil {
		return bin, hash, nil
	}
	fmt.Fprintf(progress, "building orchsim at %s into %s (once per commit)\n", hash[:12], dir)
	src := filepath.Join(dir, "src")
	if err := os.RemoveAll(src); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", "", err
	}
	archive := exec.Command("git", "archive", hash)
	tar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", "", err
	}
	tar.Stdin = pipe
	if err := tar.Start(); err != nil {
		return "", "", err
	}
	if err := archive.Run(); err != nil {
		return "", "", fmt.Errorf("git archive %s: %w", hash, err)
	}
	if err := tar.Wait(); err != nil {
		return "", "", fmt.Errorf("unpacking %s: %w", hash, err)
	}
	build := exec.Command("go", "build", "-o", bin, "./cmd/orchsim")
	build.Dir = src
	if msg, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building orchsim at %s: %w\n%s", hash[:12], err, msg)
	}
	return bin, hash, nil
}

// replayAt replays the scenario with another orchsim (bin run --trace), the seed given and every
// trace line kept: a copy of the file without its omit globs.
func replayAt(bin, name string, s *scenario.Scenario, seed int64) (scenario.Run, error) {
	data, err := os.ReadFile(s.Path)
	if err != nil {
		return scenario.Run{}, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return scenario.Run{}, err
	}
	delete(doc, "omit")
	doc["name"] = s.Name
	if seed == 0 {
		seed = s.Seed
	}
	doc["seed"] = seed
	full, err := yaml.Marshal(doc)
	if err != nil {
		return scenario.Run{}, err
	}
	dir, err := os.MkdirTemp("", "orchsim-at-")
	if err != nil {
		return scenario.Run{}, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, filepath.Base(s.Path))
	if err := os.WriteFile(file, full, 0o644); err != nil {
		return scenario.Run{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--trace", file)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	// 1 is a replay whose expectations or golden trace (there is none beside the copy) fail: its
	// trace stands. Anything else is a replay that did not happen.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return scenario.Run{}, fmt.Errorf("%s: %w\n%s", name, err, stderr.String())
	}
	return scenario.TraceRun(s, name, seed, stdout.String())
}
