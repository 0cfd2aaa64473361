package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// heapStats are the Go runtime's memory figures of orch-apiserver at one moment, from the
// runtime.MemStats its heap profile ends with (/debug/pprof/heap?debug=1, served by --profiling),
// beside its resident memory: what the heap holds live, what Go keeps unused but not yet given
// back (the scavenger returns it lazily), and what goroutine stacks take.
type heapStats struct {
	point        string
	rssKiB       int64
	heapAlloc    int64 // bytes of live objects and garbage not yet collected
	heapInuse    int64 // bytes in spans holding objects
	heapIdle     int64 // bytes in spans holding none
	heapReleased int64 // of heapIdle, bytes returned to the operating system
	stack        int64 // bytes of goroutine stacks
	sys          int64 // bytes the runtime took from the operating system
	goroutines   int
}

// parseHeapStats reads the "# Name = value" lines of a heap profile in its text form.
func parseHeapStats(text string) (heapStats, error) {
	var s heapStats
	fields := map[string]*int64{"HeapAlloc": &s.heapAlloc, "HeapInuse": &s.heapInuse, "HeapIdle": &s.heapIdle,
		"HeapReleased": &s.heapReleased, "Stack": &s.stack, "Sys": &s.sys}
	seen := 0
	for _, line := range strings.Split(text, "\n") {
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "# "), " = ")
		p, known := fields[name]
		if !ok || !known || !strings.HasPrefix(line, "# ") {
			continue
		}
		// Stack is "inuse / sys".
		first, _, _ := strings.Cut(value, " ")
		n, err := strconv.ParseInt(first, 10, 64)
		if err != nil {
			return s, fmt.Errorf("heap profile: %s = %q: %w", name, value, err)
		}
		*p = n
		seen++
	}
	if seen < len(fields) {
		return s, fmt.Errorf("heap profile: %d of the %d runtime figures found (is --profiling off?)", seen, len(fields))
	}
	return s, nil
}

func (s heapStats) String() string {
	mib := func(b int64) string { return strconv.FormatInt(b>>20, 10) }
	return fmt.Sprintf("%s: resident %d MiB; Go heap in use %s MiB (live and uncollected %s), idle and kept %s, given back %s; stacks %s MiB (%d goroutines); from the system %s MiB",
		s.point, s.rssKiB>>10, mib(s.heapInuse), mib(s.heapAlloc), mib(s.heapIdle-s.heapReleased), mib(s.heapReleased), mib(s.stack), s.goroutines, mib(s.sys))
}

// heapSnapshot asks the server for its heap profile at point: its figures, and with dir set the
// profile itself, heap-<point>.pb.gz, for `go tool pprof`. gc runs a collection first, so that
// the profile and the figures count live objects only.
func heapSnapshot(srv *server, point, dir string, gc bool) (heapStats, error) {
	query := ""
	if gc {
		query = "gc=1&"
	}
	get := func(path string) ([]byte, error) {
		resp, err := srv.client.Get(srv.url + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s %.200s", path, resp.Status, body)
		}
		return body, err
	}
	text, err := get("/debug/pprof/heap?" + query + "debug=1")
	if err != nil {
		return heapStats{}, err
	}
	s, err := parseHeapStats(string(text))
	if err != nil {
		return s, err
	}
	s.point, s.rssKiB = point, rssKiB(srv.cmd.Process.Pid)
	if goroutines, err := get("/debug/pprof/goroutine?debug=1"); err == nil {
		first, _, _ := strings.Cut(string(goroutines), "\n")
		s.goroutines, _ = strconv.Atoi(strings.TrimPrefix(first, "goroutine profile: total "))
	}
	if dir != "" {
		profile, err := get("/debug/pprof/heap")
		if err != nil {
			return s, err
		}
		if err := os.WriteFile(filepath.Join(dir, "heap-"+point+".pb.gz"), profile, 0o644); err != nil {
			return s, err
		}
	}
	return s, nil
}

// cpuProfile writes d of the server's CPU profile (/debug/pprof/profile) to file.
func cpuProfile(srv *server, file string, d time.Duration) error {
	c := &http.Client{Transport: srv.client.Transport, Timeout: d + 30*time.Second}
	resp, err := c.Get(srv.url + "/debug/pprof/profile?seconds=" + strconv.Itoa(int(d.Seconds())))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s %.200s", resp.Status, body)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}
