package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"orch.io/orch/fakecri/script"
	"orch.io/orch/sim"
)

// Duration is a Go duration string ("30s", "2m") or a number of seconds.
type Duration = script.Duration

// Scenario is one replayable node life; scenarios/README.md documents every field.
type Scenario struct {
	// Name defaults to the file name without .yaml.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Rules are the SPEC.md rules the scenario proves, as sentences.
	Rules []string `json:"rules,omitempty"`
	// Seed is the world's seed (default 1); the golden trace is for this seed.
	Seed int64 `json:"seed,omitempty"`
	// Duration is how long the world runs, in simulated time.
	Duration Duration `json:"duration"`
	// Omit are globs over "kind text" of trace lines the trace leaves out ("cri ListContainers *").
	Omit     []string `json:"omit,omitempty"`
	Nodes    []Node   `json:"nodes"`
	Timeline []Step   `json:"timeline,omitempty"`
	Expect   Expect   `json:"expect,omitempty"`

	// Path is the file the scenario was read from.
	Path string `json:"-"`
}

// Node is one node of the world.
type Node struct {
	Name string `json:"name"`
	// Args are orchlet command-line options, read by the production option parser.
	Args []string `json:"args,omitempty"`
	// Config is the node's --config file below its apiVersion and kind: the fields no option
	// sets (imageMaximumGCAge).
	Config string `json:"config,omitempty"`
	Cores  int    `json:"cores,omitempty"`
	// Manifests are the files of --pod-manifest-path at the start.
	Manifests []File `json:"manifests,omitempty"`
	// URL is what --manifest-url serves at the start.
	URL *Serve `json:"url,omitempty"`
	// Fakecri is the runtime's behaviour script (fakecri/README.md).
	Fakecri *script.Script `json:"fakecri,omitempty"`
	// API runs the node in API-server mode against the world's in-process API server.
	API bool `json:"api,omitempty"`
	// Host is the machine's memory and processes, for the eviction manager.
	Host *sim.Host `json:"host,omitempty"`
}

// File is a manifest file; with Repeat N it is N files, "{i}" in the name and content replaced by
// 1..N.
type File struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	Repeat  int    `json:"repeat,omitempty"`
}

// Serve is an answer of the manifest URL.
type Serve struct {
	// Status defaults to 200.
	Status int    `json:"status,omitempty"`
	Body   string `json:"body"`
}

// Step is a change at a simulated time; a step with nothing but at advances the world to it.
type Step struct {
	At Duration `json:"at"`
	// Node defaults to the first node.
	Node string `json:"node,omitempty"`
	// Write writes or changes manifest files; Delete removes them (globs are not expanded).
	Write  *File    `json:"write,omitempty"`
	Delete []string `json:"delete,omitempty"`
	// Serve changes what the manifest URL answers.
	Serve *Serve `json:"serve,omitempty"`
	// Fakecri replaces the runtime's script: new usage curves, faults injected or cleared.
	Fakecri *script.Script `json:"fakecri,omitempty"`
	// CreatePod is a pod manifest created through the API server (namespace default unless it
	// names one); BindPod binds a pod to a node as a scheduler does; DeletePod deletes
	// "namespace/name" through the API server with the pod's grace period.
	CreatePod string   `json:"createPod,omitempty"`
	BindPod   *BindPod `json:"bindPod,omitempty"`
	DeletePod string   `json:"deletePod,omitempty"`
	// APIServer takes the API server "down" (every request refused) or brings it back "up".
	APIServer string `json:"apiServer,omitempty"`
	// Orchlet "kill" stops the node's agent as SIGKILL does; "restart" starts a new one on its
	// runtime and root directory (sim.Node.Kill, Restart).
	Orchlet string `json:"orchlet,omitempty"`
}

// BindPod binds Pod ("namespace/name") to Node.
type BindPod struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
}

// APIServer tells whether any node runs in API-server mode, so the world serves the API.
func (s *Scenario) APIServer() bool {
	return slices.ContainsFunc(s.Nodes, func(n Node) bool { return n.API })
}

// podManifest reads a createPod step's manifest.
func podManifest(content string) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(content), &pod); err != nil {
		return nil, err
	}
	if pod.Name == "" {
		return nil, errors.New("metadata.name: required")
	}
	return &pod, nil
}

// splitPod splits "namespace/name".
func splitPod(key string) (namespace, name string, ok bool) {
	namespace, name, ok = strings.Cut(key, "/")
	return namespace, name, ok && namespace != "" && name != ""
}

// Expect is what the trace must show.
type Expect struct {
	// Contains and Absent are globs over whole trace lines ("*" matches any run of characters).
	Contains []string `json:"contains,omitempty"`
	Absent   []string `json:"absent,omitempty"`
	// Count is how many trace lines match a glob.
	Count []Count `json:"count,omitempty"`
	// Pods are pod states at a time: the glob matches the pod's last traced status line by then.
	Pods []PodAt `json:"pods,omitempty"`
	// Events counts event writes by reason.
	Events []EventCount `json:"events,omitempty"`
	// Runtime judges a node's runtime at a time by converge.Differences and converge.Replaced.
	Runtime []RuntimeAt `json:"runtime,omitempty"`
}

// RuntimeAt is the runtime of a node at a time, before the timeline's steps of that instant: each
// pod of Pods in one ready sandbox with each of its containers running once, nothing else ready
// or running; and, with Since, every pod of Pods ready then still in the same sandbox with the
// same containers running (nothing made again: what a restarted agent found it adopted).
type RuntimeAt struct {
	At   Duration `json:"at"`
	Node string   `json:"node,omitempty"`
	// Pods are namespace/name to container names.
	Pods  map[string][]string `json:"pods"`
	Since *Duration           `json:"since,omitempty"`
}

// Count is the number of trace lines matching Match.
type Count struct {
	Match string `json:"match"`
	// Lines is the number wanted (the key is not "n", which YAML reads as false).
	Lines int `json:"lines"`
}

// PodAt is a pod's state at a time.
type PodAt struct {
	At   Duration `json:"at"`
	Node string   `json:"node,omitempty"`
	// Pod is namespace/name.
	Pod string `json:"pod"`
	// State is a glob over the status ("Running app=running*"), or "gone" for a pod not on the node.
	State string `json:"state"`
}

// EventCount is how many event writes of a reason the trace holds.
type EventCount struct {
	Reason string `json:"reason"`
	// Verb is create, update or empty for both.
	Verb  string `json:"verb,omitempty"`
	Count int    `json:"count"`
}

// Load reads a scenario file and checks it: every problem is reported with its line, an unknown
// key with the keys expected there and a misspelt orchlet option with the one meant.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Scenario
	lines, err := decode(data, &s)
	if err != nil {
		return nil, located(path, err)
	}
	s.Path = path
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if err := s.validate(lines); err != nil {
		return nil, located(path, err)
	}
	return &s, nil
}

func (s *Scenario) validate(lines lineIndex) error {
	var errs []error
	bad := func(path, format string, args ...any) { errs = append(errs, lines.errorf(path, format, args...)) }
	if s.Duration <= 0 {
		bad("duration", "must be positive")
	}
	if len(s.Nodes) == 0 {
		bad("nodes", "at least one node is required")
	}
	names := map[string]bool{}
	for i, n := range s.Nodes {
		at := fmt.Sprintf("nodes[%d]", i)
		if n.Name == "" {
			bad(at+".name", "required")
		}
		if names[n.Name] {
			bad(at+".name", "%q given twice", n.Name)
		}
		names[n.Name] = true
		if err := checkArgs(n); err != nil {
			err = errors.Unwrap(err) // the path names the node
			where := at + ".args"
			if n.Config != "" && strings.Contains(err.Error(), "config") {
				where = at + ".config"
			}
			bad(where, "%s", optionHint(err))
		}
	}
	for i, st := range s.Timeline {
		at := fmt.Sprintf("timeline[%d]", i)
		if st.Node != "" && !names[st.Node] {
			bad(at+".node", "no node %q", st.Node)
		}
		api := st.CreatePod != "" || st.BindPod != nil || st.DeletePod != "" || st.APIServer != ""
		if api && !s.APIServer() {
			bad(at, "API steps need a node with api: true")
		}
		if st.CreatePod != "" {
			if _, err := podManifest(st.CreatePod); err != nil {
				bad(at+".createPod", "%v", err)
			}
		}
		if st.BindPod != nil {
			if _, _, ok := splitPod(st.BindPod.Pod); !ok {
				bad(at+".bindPod.pod", "%q is not namespace/name", st.BindPod.Pod)
			}
			if st.BindPod.Node == "" {
				bad(at+".bindPod.node", "required")
			}
		}
		if _, _, ok := splitPod(st.DeletePod); st.DeletePod != "" && !ok {
			bad(at+".deletePod", "%q is not namespace/name", st.DeletePod)
		}
		if st.APIServer != "" && st.APIServer != "down" && st.APIServer != "up" {
			bad(at+".apiServer", "%q is neither down nor up", st.APIServer)
		}
		if st.At < 0 || st.At > s.Duration {
			bad(at+".at", "%v is outside the scenario's 0..%v (duration)", st.At.D(), s.Duration.D())
		}
		if i > 0 && st.At < s.Timeline[i-1].At {
			bad(at+".at", "%v is before the step above it (%v): steps must be in time order", st.At.D(), s.Timeline[i-1].At.D())
		}
	}
	for i, p := range s.Expect.Pods {
		if p.Node != "" && !names[p.Node] {
			bad(fmt.Sprintf("expect.pods[%d].node", i), "no node %q", p.Node)
		}
	}
	s.validateGlobs(bad)
	s.validateKills(bad)
	for i, r := range s.Expect.Runtime {
		at := fmt.Sprintf("expect.runtime[%d]", i)
		if r.Node != "" && !names[r.Node] {
			bad(at+".node", "no node %q", r.Node)
		}
		if r.At < 0 || r.At > s.Duration {
			bad(at+".at", "%v is outside the scenario's 0..%v (duration)", r.At.D(), s.Duration.D())
		}
		if r.Since != nil && (*r.Since < 0 || *r.Since > r.At) {
			bad(at+".since", "%v is outside 0..%v (at)", r.Since.D(), r.At.D())
		}
		for pod := range r.Pods {
			if _, _, ok := splitPod(pod); !ok {
				bad(at+".pods", "%q is not namespace/name", pod)
			}
		}
	}
	return errors.Join(errs...)
}

// bracketRange finds what reads as a character class: globs have only * and ?, so "[0-2]" would be
// matched as those five characters, and an absent or zero count of it would assert nothing.
var bracketRange = regexp.MustCompile(`\[[0-9A-Za-z]-[0-9A-Za-z]\]`)

func (s *Scenario) validateGlobs(bad func(path, format string, args ...any)) {
	check := func(at, g string) {
		if r := bracketRange.FindString(g); r != "" {
			bad(at, "%q has %s, which a glob matches as those characters: globs have only * (any run) and ? (one character)", g, r)
		}
	}
	for i, g := range s.Omit {
		check(fmt.Sprintf("omit[%d]", i), g)
	}
	for i, g := range s.Expect.Contains {
		check(fmt.Sprintf("expect.contains[%d]", i), g)
	}
	for i, g := range s.Expect.Absent {
		check(fmt.Sprintf("expect.absent[%d]", i), g)
	}
	for i, c := range s.Expect.Count {
		check(fmt.Sprintf("expect.count[%d].match", i), c.Match)
	}
	for i, p := range s.Expect.Pods {
		check(fmt.Sprintf("expect.pods[%d].state", i), p.State)
	}
}

// Golden is the path of the scenario's golden trace: beside it, .trace for .yaml.
func (s *Scenario) Golden() string {
	return strings.TrimSuffix(s.Path, filepath.Ext(s.Path)) + ".trace"
}

// Find lists the scenario files a path names: the file itself, or the *.yaml files of a directory
// in name order.
func Find(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	return files, nil
}
